package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/workload"
)

// capacityProfile is a simulator that runs at most maxRunning requests,
// its steps a + c·B ms: a request past the cap waits for a running one
// to end, about 20 steps over maxRunning on average and up to 25, while
// one under it starts at the next step.
func capacityProfile(maxRunning int, a, c float64) string {
	return fmt.Sprintf(`name: cap
engine: vllm
model: cap
max_running: %d
kv_tokens: 100000000
chunked_prefill: 1000000
decode: {linear: {a_ms: %g, c_ms: %g}}
prefill: {fixed_ms: 0.2, per_token_us: 5}
seed: 1
`, maxRunning, a, c)
}

// searchRun runs the capacity search from C=1 against profile, sessions
// of 8 to 12 turns with no tool time, each turn 15 to 25 tokens.
func searchRun(t *testing.T, profile string, limits record.SLO) *analyze.Run {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(file, []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	in, _ := workload.ParseLengths("40:lognormal:0.5")
	out, _ := workload.ParseLengths("15-25")
	a, err := workload.ParseAgent("turns=8-12,tools=0,system=100")
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.New(workload.Options{Input: in, Output: out, Agent: &a, Seed: 3, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	var run *analyze.Run
	virtual(t, func(env *Env) {
		run, err = Sweep(context.Background(), SweepConfig{Command: "sweep", Target: Target{SimProfile: file, Endpoint: "chat"}, Prompts: w,
			Load: Load{Concurrency: []int{1}, Warmup: 0, Timeout: time.Minute, MaxStageTime: -1, UntilSLO: limits, MaxConcurrency: 64}, Out: filepath.Join(dir, "r.jsonl")}, env)
	})
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// The capacity search finds the known capacity of generated simulators:
// one that runs at most M requests keeps every turn's TTFT to its prefill
// and a step up to M concurrent sessions, and past M queues each turn
// until a running request ends (its p99 several times 20/M steps), so M
// sessions meet a TTFT p99 limit of 3 steps and M+1 fail it; TPOT's
// limit is loose.
func TestCapacitySearchFindsTheCap(t *testing.T) {
	t.Parallel()
	for i := range 3 {
		r := rand.New(rand.NewPCG(39, uint64(i)))
		m := 3 + r.IntN(6)
		a, c := 10+10*r.Float64(), 0.05+0.25*r.Float64()
		t.Run(fmt.Sprintf("max_running=%d", m), func(t *testing.T) {
			t.Parallel()
			step := a + c*float64(m)
			limits := record.SLO{TTFTMs: 3 * step, TPOTMs: 10 * (a + 64*c)}
			run := searchRun(t, capacityProfile(m, a, c), limits)
			got := run.Capacity
			if got == nil {
				t.Fatal("no capacity")
			}
			for _, lv := range got.Levels {
				t.Logf("C=%d %s: %d sessions, %d blocks, TTFT p99 %s, TPOT p99 %s", lv.Concurrency, lv.Verdict, lv.Sessions, lv.Blocks, lv.TTFT, lv.TPOT)
			}
			if got.Meets != m || got.Above != m+1 {
				t.Errorf("profile %d: %s; want %d to meet and %d to fail", i, got.Answer, m, m+1)
			}
		})
	}
}

// The capacity search finds a TPOT-bound capacity too: a simulator whose
// steps take a + c·B ms with no cap to speak of gives C sessions a TPOT
// near a + c·C, so a TPOT p99 limit halfway between K's and K+1's is met
// by K sessions and failed by K+1 (prefill, 1 µs a token, moves a step
// by well under c/2).
func TestCapacitySearchFindsTheTPOTBound(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(39, 9))
	k := 3 + r.IntN(5)
	a, c := 5+5*r.Float64(), 3+2*r.Float64()
	profile := fmt.Sprintf(`name: tpot
engine: vllm
model: tpot
max_running: 1024
kv_tokens: 100000000
chunked_prefill: 1000000
decode: {linear: {a_ms: %g, c_ms: %g}}
prefill: {fixed_ms: 0.1, per_token_us: 1}
seed: 1
`, a, c)
	run := searchRun(t, profile, record.SLO{TTFTMs: 10_000, TPOTMs: a + c*(float64(k)+0.5)})
	got := run.Capacity
	for _, lv := range got.Levels {
		t.Logf("C=%d %s: TPOT p99 %s (a + c·C = %.2f)", lv.Concurrency, lv.Verdict, lv.TPOT, a+c*float64(lv.Concurrency))
	}
	if got.Meets != k || got.Above != k+1 {
		t.Errorf("%s; want %d to meet and %d to fail", got.Answer, k, k+1)
	}
}
