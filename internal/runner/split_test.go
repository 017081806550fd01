package runner_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/workload"
)

// virtualStage runs one closed-loop stage against the simulator over an
// in-memory network in virtual time, and returns the records with the
// server's truth of each (by the client's X-Request-Id).
// cfg names the endpoint, engine and any extra body; the rest is filled.
func virtualStage(t *testing.T, p *sim.Profile, cfg backend.Config, c, n int, wl workload.Synthetic) ([]record.Record, record.Clock, map[string]sim.TraceRequest) {
	t.Helper()
	var (
		recs  []record.Record
		clock record.Clock
		truth = map[string]sim.TraceRequest{}
	)
	synctest.Test(t, func(t *testing.T) {
		nw := memnet.New()
		srv := sim.New(p, sim.Options{})
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan struct{})
		go func() { defer close(served); srv.Serve(ctx, nw) }()
		cfg.URL, cfg.Model, cfg.Conns, cfg.Dial = "http://sim", p.Model, c, nw.Dial
		b, err := backend.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := &runner.Runner{Backend: b, Source: wl.Request, Clock: record.NewClock()}
		recs, clock = r.Stage(context.Background(), runner.Plan{Concurrency: c, Requests: n, Timeout: time.Minute}), r.Clock
		synctest.Wait() // each handler files its trace after its last write
		for _, tr := range srv.Trace() {
			truth[tr.RequestID] = tr
		}
		b.Close()
		cancel()
		<-served
	})
	return recs, clock, truth
}

// The TTFT split sums to the measured TTFT, and each part the server
// reports is the simulator's truth: its queue (admission − arrival) and its
// prefill (the first token's step − admission). Over an in-memory network
// in virtual time the delivery both ways takes no time, so the rest is
// exactly what the server did not report: the server's time before its
// queue, after the first step, and on llama.cpp (which reports no queue)
// the queue itself, on SGLang and vLLM (no prefill) the prefill. vLLM
// reports its queue only when asked (include_metrics, --extra-body). Four slots of a server that runs two requests at a
// time make every request after the first two wait in its queue.
func TestTTFTSplitMatchesSimulatorTruth(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"llamacpp", "ollama", "sglang", "vllm"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			y := fmt.Sprintf(`name: split
model: split
engine: %s
max_running: 2
chunked_prefill: 1024
decode: {linear: {a_ms: 6, c_ms: 0.01}}
prefill: {fixed_ms: 0.5, per_token_us: 40}
request_overhead_ms: 3
wire: {request_times: true}
`, engine)
			p, err := sim.ParseProfile("split.yaml", []byte(y))
			if err != nil {
				t.Fatal(err)
			}
			wl := workload.Synthetic{InputTokens: 300, OutputTokens: 20, IgnoreEOS: true, Seed: 5}
			cfg := backend.Config{Endpoint: "generate", Engine: engine}
			if engine == "vllm" {
				cfg.Endpoint, cfg.ExtraBody = "completions", []byte(`{"include_metrics":true}`)
			}
			recs, clock, truth := virtualStage(t, p, cfg, 4, 24, wl)
			queued := 0
			for _, rec := range recs {
				if !rec.OK() {
					t.Fatalf("request %d: %s %s", rec.ID, rec.Status, rec.Error)
				}
				tr, ok := truth[fmt.Sprintf("tokperf-%d", rec.ID)]
				if !ok || tr.FirstStep.IsZero() || len(tr.Chunks) == 0 {
					t.Fatalf("request %d has no truth with a first step", rec.ID)
				}
				s, ok := rec.TTFTSplit()
				ttft, _ := rec.TTFT()
				if !ok || s.Queue+s.Prefill+s.Rest != ttft {
					t.Fatalf("request %d: split %+v does not sum to its TTFT %v", rec.ID, s, ttft)
				}
				queue, prefill := tr.Admitted.Sub(tr.Arrived), tr.FirstStep.Sub(tr.Admitted)
				if queue > 4*time.Millisecond {
					queued++
				}
				// Known parts as the server's rounding allows: llama.cpp's
				// prompt_ms in µs, SGLang's seconds as a float64.
				near := func(a, b time.Duration) bool { return (a - b).Abs() <= 2*time.Microsecond }
				sent := clock.Start().Add(rec.Sent)
				rest := tr.Arrived.Sub(sent) + tr.Chunks[0].At.Sub(tr.FirstStep)
				switch engine {
				case "llamacpp", "ollama":
					if s.QueueKnown || !s.PrefillKnown || !near(s.Prefill, prefill) {
						t.Errorf("request %d: %s prefill %v (known %v), queue known %v; truth prefill %v", rec.ID, engine, s.Prefill, s.PrefillKnown, s.QueueKnown, prefill)
					}
					rest += queue
				case "sglang", "vllm":
					if !s.QueueKnown || s.PrefillKnown || !near(s.Queue, queue) {
						t.Errorf("request %d: %s queue %v (known %v), prefill known %v; truth queue %v", rec.ID, engine, s.Queue, s.QueueKnown, s.PrefillKnown, queue)
					}
					rest += prefill
				}
				if !near(s.Rest, rest) {
					t.Errorf("request %d: rest %v, truth %v (queue %v, prefill %v)", rec.ID, s.Rest, rest, queue, prefill)
				}
			}
			if queued < len(recs)/3 {
				t.Errorf("%d of %d requests waited in the server's queue: the test does not exercise it", queued, len(recs))
			}
		})
	}
}
