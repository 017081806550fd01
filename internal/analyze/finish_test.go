package analyze

import (
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// The short-output warning knows the engine and the finish reasons: TGI
// and Ollama have no ignore_eos, so their EOS stops are normal; outputs
// that all ended at the limit were not cut by EOS; only a server that
// takes ignore_eos and stopped early disobeyed it (issue 37).
func TestShortOutputKnowsEngineAndFinish(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, engine, finish string
		want, not            string
	}{
		{"tgi stops at EOS", "tgi", "eos_token", "tgi has no ignore_eos", "did not honour"},
		{"ollama stops", "ollama", "stop", "ollama has no ignore_eos", "did not honour"},
		{"vllm stops at EOS", "vllm", "stop", "12 of 12 requests stopped before the limit", "has no ignore_eos"},
		{"every one at the limit", "vllm", "length", "every request ended at its token limit", "did not honour"},
		{"llama.cpp's limit", "llamacpp", "limit", "every request ended at its token limit", "did not honour"},
		{"no reasons", "openai", "", "gave no finish reasons", "has no ignore_eos"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			setup := record.Setup{Server: record.Server{Engine: tc.engine}, Workload: record.Workload{OutputTokens: 256, IgnoreEOS: true}}
			var recs []record.Record
			for i := range 12 {
				r := req(i, 1, time.Duration(i)*time.Second, 30, 0, 100)
				r.FinishReason = tc.finish
				recs = append(recs, r)
			}
			ws := checks(situation{setup: setup, recs: recs}.run().Warnings, "short_output")
			if len(ws) != 1 || !strings.Contains(ws[0].Text, tc.want) || strings.Contains(ws[0].Text, tc.not) {
				t.Errorf("short_output %v; want one saying %q and not %q", ws, tc.want, tc.not)
			}
		})
	}
}

// Prompts counted from what tokperf sent are said to be so.
func TestPromptSentIsLabelled(t *testing.T) {
	t.Parallel()
	var recs []record.Record
	for i := range 6 {
		r := req(i, 1, time.Duration(i)*time.Second, 0, 0, 20)
		r.PromptSource, r.AskedPromptTokens, r.AskedPromptSource = record.SourceNone, 64, record.SourceTokenizer
		recs = append(recs, r)
	}
	run := situation{setup: record.Setup{Workload: record.Workload{OutputTokens: 20}}, recs: recs}.run()
	ws := checks(run.Warnings, "prompt_source")
	if len(ws) != 1 || !strings.Contains(ws[0].Text, "no prompt count for 6 of 6 requests") || run.Stages[0].Stage.PromptTokens != 6*64 {
		t.Errorf("prompt tokens %d, warnings %v; want 384 and one prompt_source warning", run.Stages[0].Stage.PromptTokens, ws)
	}
}
