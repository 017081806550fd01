package bench

import (
	"context"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/report"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/workload"
)

// A reasoning profile: the first 30 of 50 tokens stream on the reasoning
// channel. The report's TTFT (first token on any channel), TTFO (first
// visible content) and reasoning tokens are the simulator's own: its trace
// says when it wrote the first chunk and the first past the thinking.
func TestReasoningMatchesTheSimulator(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		field, wire string
		source      record.TokenSource
	}{{"reasoning_content", "", record.SourceUsage}, {"reasoning", "", record.SourceUsage}, {"reasoning_content", "wire: {omit_usage: true}", record.SourceChunks}} {
		field := c.field
		t.Run(field+c.wire, func(t *testing.T) {
			p, err := sim.ParseProfile("r.yaml", []byte(fmt.Sprintf(`name: think
engine: vllm
model: think
max_running: 64
decode: {linear: {a_ms: 5, c_ms: 0}}
prefill: {fixed_ms: 2, per_token_us: 10}
reasoning: {tokens: 30, field: %s}
seed: 1
%s
`, field, c.wire)))
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "r.jsonl")
			var run *analyze.Run
			var truth map[string]sim.TraceRequest
			synctest.Test(t, func(t *testing.T) {
				n := memnet.New()
				ctx, stop := context.WithCancel(context.Background())
				srv := sim.New(p, sim.Options{})
				done := make(chan struct{})
				go func() { defer close(done); srv.Serve(ctx, n) }()
				env := &Env{Listen: func(string) (net.Listener, error) { return n, nil }, Dial: n.Dial}
				run, err = Sweep(context.Background(), SweepConfig{Command: "run", Target: Target{URL: "http://" + n.Addr().String(), Endpoint: "chat"},
					Workload: workload.Synthetic{InputTokens: 20, OutputTokens: 50, IgnoreEOS: true, Seed: 1},
					Load:     Load{Concurrency: []int{4}, Requests: 8, Warmup: 0, Timeout: time.Minute}, Out: out}, env)
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(time.Second) // the handlers file their traces
				truth = map[string]sim.TraceRequest{}
				for _, tr := range srv.Trace() {
					truth[tr.RequestID] = tr
				}
				stop()
				<-done
			})
			rd, f, err := results.Open(out)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var ttft, ttfo []float64
			for rd.Next() {
				rec := rd.Record()
				tr, ok := truth[fmt.Sprintf("tokperf-%d", rec.ID)]
				if !ok {
					t.Fatalf("request %d not in the simulator's trace", rec.ID)
				}
				// Without usage the reasoning-only chunks are counted, one token each.
				if rec.ReasoningTokens != 30 || rec.ReasoningSource != c.source || rec.OutputTokens != 50 {
					t.Errorf("request %d: %d reasoning tokens (%s) of %d, want 30 (%s) of 50", rec.ID, rec.ReasoningTokens, rec.ReasoningSource, rec.OutputTokens, c.source)
				}
				// The first content is the chunk that takes the count past 30.
				first, cum := -1, 0
				for i, c := range tr.Chunks {
					if cum += c.Tokens; cum > 30 && first < 0 {
						first = i
					}
				}
				gotFirst, _ := rec.TTFT()
				gotContent, ok := rec.TTFO()
				wantFirst, wantContent := tr.Chunks[0].At.Sub(tr.Arrived), tr.Chunks[first].At.Sub(tr.Arrived)
				if !ok || absDur(gotFirst-wantFirst) > time.Millisecond || absDur(gotContent-wantContent) > time.Millisecond {
					t.Errorf("request %d: TTFT %v, TTFO %v; the simulator wrote them at %v and %v", rec.ID, gotFirst, gotContent, wantFirst, wantContent)
				}
				ttft, ttfo = append(ttft, ms(wantFirst)), append(ttfo, ms(wantContent))
			}
			s := run.Stages[0].Stage
			if s.ReasoningTokens != 8*30 || s.OutputTokens != 8*50 {
				t.Errorf("stage: %d reasoning of %d tokens", s.ReasoningTokens, s.OutputTokens)
			}
			if s.TTFO.P50 < s.TTFT.P50+100 {
				t.Errorf("TTFO p50 %.1f ms, TTFT %.1f: 29 steps of 5 ms apart in the profile", s.TTFO.P50, s.TTFT.P50)
			}
			var b strings.Builder
			report.Text(&b, run)
			for _, want := range []string{"reasoning 240 of 400 output tokens (60%), content 160", "TTFO (first visible content)", "were reasoning, more than half"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("no %q in the report:\n%s", want, b.String())
				}
			}
			// The report's distributions are the simulator's, to 1 ms.
			if tt, to := stats.Describe(ttft), stats.Describe(ttfo); math.Abs(tt.P50-s.TTFT.P50) > 1 || math.Abs(to.P50-s.TTFO.P50) > 1 || math.Abs(to.P99-s.TTFO.P99) > 1 {
				t.Errorf("report TTFT p50 %.2f, TTFO p50/p99 %.2f/%.2f; the simulator's %.2f, %.2f/%.2f", s.TTFT.P50, s.TTFO.P50, s.TTFO.P99, tt.P50, to.P50, to.P99)
			}
		})
	}
}

func absDur(d time.Duration) time.Duration { return max(d, -d) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
