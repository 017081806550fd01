package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/summary"
)

// runAgainst runs tokperf against a simulator served on an in-memory
// network at http://sim.test, in virtual time, and returns the JSON
// report's setup and stages.
func runAgainst(t *testing.T, profile string, args ...string) (record.Setup, []summary.Stage, string, int) {
	t.Helper()
	p, err := sim.LoadProfile(profile)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Setup  record.Setup
		Stages []summary.Stage
	}
	var errs string
	var code int
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		srv := sim.New(p, sim.Options{NoTrace: true})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); srv.Serve(ctx, n) }()
		var out, errw bytes.Buffer
		e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errw, bench: bench.Env{Dial: n.Dial, Getenv: func(string) string { return "" }}}
		code = run(context.Background(), append(args, "--format", "json", "-o", filepath.Join(t.TempDir(), "r.jsonl")), e)
		errs = errw.String()
		if code == 0 {
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Errorf("%v: %.300s", err, out.String())
			}
		}
		cancel()
		<-done
	})
	return doc.Setup, doc.Stages, errs, code
}

// vLLM's bench serve line, typed into tokperf: one level of 8 with 64
// prompts of 128 tokens asking 64 (vLLM's --max-concurrency is the
// concurrency, not a cap on a search).
func TestVLLMFlags(t *testing.T) {
	t.Parallel()
	setup, stages, errw, code := runAgainst(t, "tiny", "sweep", "--base-url", "http://sim.test", "--max-concurrency", "8", "--num-prompts", "64",
		"--random-input-len", "128", "--random-output-len", "64", "--dataset-name", "random", "--save-result", "--request-rate", "inf", "--warmup", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	if len(stages) != 1 || stages[0].Concurrency != 8 || stages[0].Requests != 64 {
		t.Fatalf("stages %+v: want one level of 8 with 64 requests", stages)
	}
	if w := setup.Workload; w.InputTokens != 128 || w.OutputTokens != 64 || stages[0].OutputTokens != 64*64 {
		t.Errorf("workload %d in, %d out, %d tokens received: want 128, 64 and 4096", w.InputTokens, w.OutputTokens, stages[0].OutputTokens)
	}
	if setup.URL != "http://sim.test" {
		t.Errorf("URL %q: --base-url not taken", setup.URL)
	}
}

// Each vLLM alias or translation lands on tokperf's meaning.
func TestVLLMFlagTranslations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		args     []string
		endpoint string
		c        int
	}{
		{"backend openai-chat", []string{"--backend", "openai-chat"}, "chat", 2},
		{"backend vllm", []string{"--backend", "vllm"}, "completions", 2},
		{"endpoint path", []string{"--endpoint", "/v1/chat/completions"}, "chat", 2},
		{"max-concurrency with until-saturated is the cap", []string{"--until-saturated", "--max-concurrency", "2", "-c", "1,2"}, "completions", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"sweep", "--url", "http://sim.test", "--num-prompts", "4", "--output-tokens", "4", "--warmup", "0", "-c", "2"}, tc.args...)
			setup, stages, errw, code := runAgainst(t, "tiny", args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errw)
			}
			if setup.Endpoint != tc.endpoint || stages[0].Concurrency != tc.c {
				t.Errorf("endpoint %q, first level %d: want %q and %d", setup.Endpoint, stages[0].Concurrency, tc.endpoint, tc.c)
			}
		})
	}
}

// GuideLLM's and AIPerf's names, and vLLM's that mean something else, are
// answered with tokperf's flag, never a wrong guess.
func TestPeerFlagHints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ args, want string }{
		{"sweep --target http://h:8000", "--target is GuideLLM's; tokperf sweep says --url"},
		{"sweep --data prompt_tokens=256", "--data is GuideLLM's; tokperf sweep says --dataset"},
		{"sweep --max-seconds 60", "tokperf sweep says --duration"},
		{"run --request-count 10", "--request-count is AIPerf's; tokperf run says --requests"},
		{"run --endpoint-type chat", "--endpoint-type is AIPerf's; tokperf run says --endpoint"},
		{"run --max-concurrency 4", "--max-concurrency is vLLM's; tokperf run says --concurrency"},
		{"sweep --dataset-name burstgpt", `--dataset-name "burstgpt": tokperf takes random`},
		{"sweep --dataset-name sharegpt", "needs --dataset-path FILE"},
		{"sweep --backend trtllm", "tokperf detects the server"},
		{"sweep --request-rate fast", "want requests per second, or inf"},
	} {
		t.Run(tc.args, func(t *testing.T) {
			t.Parallel()
			_, errw, code := runCLI(t, strings.Fields(tc.args)...)
			if code != 2 || !strings.Contains(errw, tc.want) {
				t.Errorf("exit %d, %q: want 2 and %q", code, errw, tc.want)
			}
		})
	}
}

// Every alias names a flag that run or sweep has, so none is dead.
func TestPeerAliasesExist(t *testing.T) {
	t.Parallel()
	for _, p := range peerFlags {
		if !p.alias {
			continue
		}
		fs := newFlags("sweep")
		new(loadFlags).register(fs, "sweep")
		if fs.FlagSet.Lookup(p.ours) == nil {
			t.Errorf("%s's --%s is an alias of --%s, which sweep lacks", p.tool, p.name, p.ours)
		}
	}
}

// vLLM's names for the dataset, the result file and the percentiles land
// on tokperf's: the ShareGPT file's prompts are sent, the records go to
// the file named, the table shows the percentiles asked.
func TestVLLMFileAndPercentileAliases(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	res := filepath.Join(dir, "vllm-named.jsonl")
	out, errw, code := runCLI(t, "sweep", "--virtual", "--sim-profile", "tiny", "--max-concurrency", "2", "--num-prompts", "4", "--warmup", "0",
		"--dataset-name", "sharegpt", "--dataset-path", "../workload/testdata/sharegpt.json", "--result-filename", res, "--metric-percentiles", "50,90")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	if !strings.Contains(out, "p50/p90") || strings.Contains(out, "p50/p99") {
		t.Errorf("--metric-percentiles 50,90 not taken:\n%s", out)
	}
	head, err := os.ReadFile(res)
	if err != nil {
		t.Fatalf("--result-filename: %v", err)
	}
	if !strings.Contains(string(head), `"prompts":"dataset`) && !strings.Contains(string(head), "sharegpt") {
		t.Errorf("the result file's header does not name the dataset:\n%.400s", head)
	}
}
