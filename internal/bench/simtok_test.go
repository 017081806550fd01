package bench

import (
	"bufio"
	"context"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/tokenizer"
	"github.com/tokperf/tokperf/internal/workload"
)

// With a tokenizer on both sides (tokperf sim --tokenizer, or the embedded
// simulator given the client's), a Mooncake-format trace's prompts are
// exactly their input_length by it, and the simulator's prefix cache,
// keyed by the same tokens, hits the share of tokens trace stats computes
// from the file alone, within half a point; its /metrics hit rate is the
// share its answers' usage says, within a tenth of a point.
func TestTraceReplayInTokens(t *testing.T) {
	for _, engine := range []string{"vllm", "sglang"} {
		t.Run(engine, func(t *testing.T) { traceReplayInTokens(t, engine) })
	}
}

func traceReplayInTokens(t *testing.T, engine string) {
	tok, err := tokenizer.Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	const block = 64
	tr := groupTrace(t, 200, 200, 4, block)
	want := tr.Stats(block)
	var page string
	dir := t.TempDir()
	var cached, prompt int
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		ctx, stop := context.WithCancel(context.Background())
		srv := sim.New(cacheProfileOf(t, engine), sim.Options{NoTrace: true, Tokenizer: tok})
		done := make(chan struct{})
		go func() { defer close(done); srv.Serve(ctx, n) }()
		env := &Env{Listen: func(string) (net.Listener, error) { return n, nil }, Dial: n.Dial}
		w, err := workload.New(workload.Options{Trace: tr, BlockSize: block, Seed: 1, IgnoreEOS: true, Tokenizer: tok})
		if err != nil {
			t.Fatal(err)
		}
		run, err := Sweep(context.Background(), SweepConfig{Command: "run", Target: Target{URL: "http://" + n.Addr().String()}, Prompts: w,
			Load: Load{Trace: tr, Timeout: time.Minute}, Out: filepath.Join(dir, "r.jsonl")}, env)
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Stages) != 1 || run.Stages[0].OK != len(tr.Requests) {
			t.Fatalf("stages %+v", run.Figures())
		}
		st := run.Stages[0].Stage
		cached, prompt = int(st.CachedTokens), int(st.PromptTokens)
		c := &http.Client{Transport: &http.Transport{DialContext: n.Dial}}
		resp, err := c.Get("http://" + n.Addr().String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&sb)
		resp.Body.Close()
		page = sb.String()
		stop()
		<-done
	})
	// Each engine's own names: vLLM counts tokens, SGLang gives a rate.
	var got float64
	if engine == "sglang" {
		got = metric(t, page, "sglang:cache_hit_rate")
	} else {
		hits, queries := metric(t, page, "vllm:prefix_cache_hits_total"), metric(t, page, "vllm:prefix_cache_queries_total")
		if got = hits / queries; queries != float64(want.InputTokens) {
			t.Errorf("the simulator was asked %.0f prompt tokens, the trace has %d", queries, want.InputTokens)
		}
	}
	usage := float64(cached) / float64(prompt)
	t.Logf("hit rate %.2f%% by /metrics, %.2f%% by usage (%d of %d); trace stats: %.2f%% of %d tokens", 100*got, 100*usage, cached, prompt, 100*want.TokenReuse(), want.InputTokens)
	if prompt != int(want.InputTokens) {
		t.Errorf("the answers' usage counts %d prompt tokens, the trace has %d", prompt, want.InputTokens)
	}
	if math.Abs(got-want.TokenReuse()) > 0.005 {
		t.Errorf("the simulator hit %.2f%%, trace stats says %.2f%%", 100*got, 100*want.TokenReuse())
	}
	if math.Abs(got-usage) > 0.001 {
		t.Errorf("/metrics says %.2f%%, the answers' usage %.2f%%", 100*got, 100*usage)
	}
}
