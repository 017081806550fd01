package telemetry_test

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/netstat"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/telemetry"
	"github.com/tokperf/tokperf/internal/workload"
)

// Spec acceptance and the generated-token rate read from the simulator's
// /metrics agree with its engine's own counters and with the tokens its
// trace says it sent, for both naming schemes.
func TestMetricsAgainstSimulatorTruth(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"vllm", "sglang"} {
		t.Run(name, func(t *testing.T) {
			p, err := sim.ParseProfile("spec.yaml", []byte(`name: spec
engine: `+name+`
model: m
decode: {linear: {a_ms: 4, c_ms: 0.05}}
prefill: {per_token_us: 10}
speculative: {method: EAGLE, drafts: 3, acceptance: 0.6}
`))
			if err != nil {
				t.Fatal(err)
			}
			synctest.Test(t, func(t *testing.T) {
				n := memnet.New()
				// A machine that drops 2 packets and resends 1 segment
				// between any two scrapes.
				var reads atomic.Int64
				host := func() (netstat.Counters, bool) {
					n := uint64(reads.Add(1))
					return netstat.Counters{Dropped: 2 * n, Retrans: n}, true
				}
				srv := sim.New(p, sim.Options{Host: host})
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan struct{})
				go func() { defer close(done); srv.Serve(ctx, n) }()
				client := backend.NewClient(8, n.Dial)
				b, _ := backend.New(backend.Config{URL: "http://sim", Endpoint: "completions", Model: "m", Conns: 8, Dial: n.Dial})
				names := engine.MetricNames(name)
				clock := record.NewClock()
				w := telemetry.Watch(ctx, client, "http://sim/metrics", names, clock, 0, 200*time.Millisecond)
				wl := workload.Synthetic{InputTokens: 16, OutputTokens: 300, IgnoreEOS: true}
				r := &runner.Runner{Backend: b, Source: wl.Request, Clock: clock}
				recs := r.Stage(ctx, runner.Plan{Concurrency: 8, Requests: 16})
				time.Sleep(time.Millisecond)
				samples := w.Stop()
				got := analyze.SummarizeCounters(samples, names, 0, clock.Now())
				e := srv.Engine()
				truthLength := 1 + float64(e.SpecAccepted.Load())/float64(e.SpecDrafts.Load())
				if math.Abs(got.SpecLength/truthLength-1) > 0.01 {
					t.Errorf("acceptance length %.3f from /metrics, the engine's %.3f", got.SpecLength, truthLength)
				}
				tokens := 0
				for _, tr := range srv.Trace() {
					for _, c := range tr.Chunks {
						if at := c.At.Sub(clock.Start()); at > got.From && at <= got.To {
							tokens += c.Tokens
						}
					}
				}
				truthRate := float64(tokens) / (got.To - got.From).Seconds()
				if math.Abs(got.GenTokS/truthRate-1) > 0.02 {
					t.Errorf("generated %.1f tok/s from /metrics, the trace %.1f", got.GenTokS, truthRate)
				}
				if steps := float64(got.Samples - 1); got.HostDropped != 2*steps || got.HostRetrans != steps {
					t.Errorf("host dropped %.0f, resent %.0f over %d samples; want %.0f and %.0f", got.HostDropped, got.HostRetrans, got.Samples, 2*steps, steps)
				}
				if len(recs) != 16 {
					t.Errorf("%d records", len(recs))
				}
				b.Close()
				client.CloseIdleConnections()
				cancel()
				<-done
			})
		})
	}
}
