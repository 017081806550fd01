package runner_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/summary"
	"github.com/tokperf/tokperf/internal/workload"
)

// Speculative decoding explained against the simulator's truth, over a
// seeded family of servers (drafts 1..5, acceptance 0.3..0.9, step costs
// and draft costs drawn): each runs the same workload with and without
// speculation at C=1 and C=4, and the explanation, read from the stream
// alone (decode tokens per chunk, no counters), must find the acceptance
// length (1 − α^(k+1)) / (1 − α) and the verify step's cost against a
// plain step, StepTime(B, k+1) / StepTime(B, 1), within the sampling
// noise of the acceptance draws; and measured = expected / step cost.
func TestSpeculationMatchesSimulatorTruth(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(41, 5))
	for i := range 6 {
		k, alpha := 1+rng.IntN(5), 0.3+0.6*rng.Float64()
		a, c, draft := 4+8*rng.Float64(), 0.02+0.3*rng.Float64(), 0.2+2*rng.Float64()
		t.Run(fmt.Sprintf("k=%d α=%.2f", k, alpha), func(t *testing.T) {
			t.Parallel()
			y := fmt.Sprintf(`name: spec
model: spec
engine: sglang
max_running: 64
chunked_prefill: 4096
decode: {linear: {a_ms: %g, c_ms: %g}}
prefill: {fixed_ms: 1, per_token_us: 20}
stream_interval: 1
seed: %d
`, a, c, i+1)
			base, err := sim.ParseProfile("base.yaml", []byte(y))
			if err != nil {
				t.Fatal(err)
			}
			spec, err := sim.ParseProfile("spec.yaml", fmt.Appendf([]byte(y), "speculative: {method: EAGLE, drafts: %d, acceptance: %g, draft_ms: %g}\n", k, alpha, draft))
			if err != nil {
				t.Fatal(err)
			}
			wl := workload.Synthetic{InputTokens: 50, OutputTokens: 150, IgnoreEOS: true, Seed: 9}
			runOf := func(p *sim.Profile, name string) *analyze.Run {
				r := &analyze.Run{File: name}
				for si, cc := range []int{1, 4} {
					recs, _, _ := virtualStage(t, p, backend.Config{Endpoint: "generate", Engine: "sglang"}, cc, 8*cc, wl)
					for j := range recs {
						recs[j].Stage, recs[j].Concurrency = si, cc
					}
					r.Stages = append(r.Stages, analyze.Stage{Stage: summary.Of(recs, cc)})
				}
				return r
			}
			x := analyze.ExplainSpeculation(runOf(base, "base"), runOf(spec, "spec"))
			if x == nil || len(x.Levels) != 2 {
				t.Fatalf("explanation %+v", x)
			}
			wantL := spec.TokensPerStep()
			// The mean of n verify steps' tokens: its standard error.
			steps := float64(8*150) / wantL
			sd := math.Sqrt(variance(k, alpha) / steps)
			for li, l := range x.Levels {
				b := []int{1, 4}[li]
				wantCost := float64(spec.StepTime(b, k+1, 0)) / float64(base.StepTime(b, 1, 0))
				if math.Abs(l.TokensPerStep-wantL) > 4*sd+0.01 {
					t.Errorf("%s: %.3f tokens per verify step, truth %.3f (± %.3f)", l.Label, l.TokensPerStep, wantL, 4*sd)
				}
				if math.Abs(l.StepCost/wantCost-1) > 0.02 {
					t.Errorf("%s: a verify step costs %.3f plain steps, truth %.3f", l.Label, l.StepCost, wantCost)
				}
				if math.Abs(l.Measured-l.Expected/l.StepCost) > 1e-9 {
					t.Errorf("%s: measured %.4f is not expected %.4f / step cost %.4f", l.Label, l.Measured, l.Expected, l.StepCost)
				}
				t.Logf("%s", l.Text)
			}
		})
	}
}

// variance is the variance of the tokens one verify step yields: 1 + the
// drafts accepted in a row, each with probability alpha, at most k.
func variance(k int, alpha float64) float64 {
	var m, m2 float64
	for n := 0; n <= k; n++ {
		p := math.Pow(alpha, float64(n))
		if n < k {
			p *= 1 - alpha
		}
		v := float64(n + 1)
		m, m2 = m+p*v, m2+p*v*v
	}
	return m2 - m*m
}
