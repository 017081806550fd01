package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
)

// The header says what each request asked for: a dataset's own output
// lengths, not the --output-tokens default, and prompt lengths that are
// estimated as estimated.
func TestDescribeSaysWhatWasAsked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		setup     record.Setup
		want, not string
	}{
		{"a dataset's lengths", record.Setup{Workload: record.Workload{Input: "dataset", Output: "dataset", OutputTokens: 256, Prompts: "dataset d.jsonl"}},
			"workload: the dataset's prompts, output tokens as the dataset asks,", "up to 256"},
		{"no tokenizer", record.Setup{Workload: record.Workload{InputTokens: 128, OutputTokens: 256}},
			"workload: ~128-token prompts (estimated: no tokenizer), up to 256 output tokens,", "workload: 128-token"},
		{"a tokenizer", record.Setup{Workload: record.Workload{InputTokens: 128, OutputTokens: 256, Tokenizer: "llama3", Prompts: "synthetic"}},
			"workload: 128-token prompts, up to 256 output tokens,", "estimated"},
		// The fixed word list on the simulator is one word a token exactly.
		{"the word list on the simulator", record.Setup{Simulated: true, Workload: record.Workload{InputTokens: 128, OutputTokens: 256}},
			"workload: 128-token prompts, up to 256 output tokens,", "estimated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Describe(tc.setup)
			if !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
				t.Errorf("%s\nwant %q, not %q", got, tc.want, tc.not)
			}
		})
	}
}

// A stage where requests failed and the runner backed off says so without
// "0 answers asked the client to wait"; an open loop's late threshold is
// printed beside its late count.
func TestBackoffAndLateThresholdShown(t *testing.T) {
	t.Parallel()
	r := run()
	r.Stages[0].BackoffS = 3.2
	r.Stages[1].RetryAfter, r.Stages[1].BackoffS = 2, 4
	r.Stages[1].Late, r.Stages[1].LateMs = 1, 1.23
	var b bytes.Buffer
	Render(&b, "text", r)
	out := b.String()
	for _, want := range []string{
		"C=1: the slots backed off 3.2 s in all after requests that failed",
		"C=2: 2 answers asked the client to wait (Retry-After)",
		"C=2: 1 of 4 sends were late, more than 1.23 ms behind schedule (the late threshold: 1 ms past this machine's timer oversleep)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "0 answers asked") || strings.Contains(out, "C=1: 0 of") {
		t.Errorf("%s", out)
	}
}

// TGI has no ignore_eos and tokperf sends it none: the header does not
// claim it was in force (issue 37).
func TestDescribeTGIHasNoIgnoreEOS(t *testing.T) {
	t.Parallel()
	for engine, want := range map[string]string{"tgi": "EOS honoured (tgi has no ignore_eos)", "vllm": "ignore_eos"} {
		got := Describe(record.Setup{Server: record.Server{Engine: engine}, Route: "/generate_stream", Model: "m", Workload: record.Workload{InputTokens: 8, OutputTokens: 16, IgnoreEOS: true}})
		if !strings.Contains(got, want) || (engine == "tgi" && strings.Contains(got, ", ignore_eos")) {
			t.Errorf("%s: %q; want %q", engine, got, want)
		}
	}
}
