package bench

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/workload"
)

// repeatRun sweeps levels, each repeats times, against a flat-step profile
// (10 ms + 0.5 ms a running request, 10% jitter, seeded) in virtual time.
func repeatRun(t *testing.T, seed int, repeats int, extra string, levels ...int) *analyze.Run {
	t.Helper()
	dir := t.TempDir()
	profile := filepath.Join(dir, "flat.yaml")
	yaml := "name: flat\nengine: vllm\ndecode:\n  linear: {a_ms: 10, c_ms: 0.5}\nprefill:\n  per_token_us: 10\njitter: 0.1\nseed: " + strconv.Itoa(seed) + "\n" + extra
	if err := os.WriteFile(profile, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	var run *analyze.Run
	virtual(t, func(env *Env) {
		var err error
		cfg := SweepConfig{Command: "sweep", Target: Target{SimProfile: profile}, Load: Load{Concurrency: levels, Warmup: 1, Requests: 4, Repeat: repeats, Seed: int64(seed)},
			Workload: workload.Synthetic{InputTokens: 16, OutputTokens: 50, IgnoreEOS: true, Seed: int64(seed)}, Out: filepath.Join(dir, "r.jsonl")}
		if run, err = Sweep(context.Background(), cfg, env); err != nil {
			t.Fatal(err)
		}
	})
	return run
}

// --repeat 5: the 95% interval of the mean TPOT across repeats covers the
// profile's true step time (10.5 ms at one running request) in at least
// 17 of 20 seeded runs (nominally 19).
func TestRepeatIntervalsCoverTruth(t *testing.T) {
	t.Parallel()
	const truth = 10.5
	covered := 0
	for seed := 1; seed <= 20; seed++ {
		run := repeatRun(t, seed, 5, "", 1)
		if len(run.Stages) != 5 || len(run.Repeats) != 1 || run.Repeats[0].N != 5 {
			t.Fatalf("seed %d: %d stages, repeats %+v", seed, len(run.Stages), run.Repeats)
		}
		f := run.Repeats[0].Figure("tpot_mean_ms")
		if f == nil || f.Lo == nil || len(f.Values) != 5 {
			t.Fatalf("seed %d: TPOT across repeats %+v", seed, f)
		}
		if *f.Lo <= truth && truth <= *f.Hi {
			covered++
		} else {
			t.Logf("seed %d: TPOT %.3f [%.3f, %.3f] misses %.1f", seed, f.Mean, *f.Lo, *f.Hi, truth)
		}
	}
	t.Logf("covered %d of 20", covered)
	if covered < 17 {
		t.Errorf("the 95%% interval covered the truth in %d of 20 runs", covered)
	}
}

// Repeats are interleaved (1 4 1 4 …), and the run warns when the levels'
// spread across repeats is wider than their difference: a server that
// runs one request at a time gives C=2 what it gives C=1.
func TestRepeatSpreadWarning(t *testing.T) {
	t.Parallel()
	run := repeatRun(t, 1, 3, "", 1, 4)
	if len(run.Stages) != 6 || run.Stages[0].Concurrency != 1 || run.Stages[1].Repeat != 1 || run.Stages[3].Concurrency != 4 {
		t.Fatalf("stages %+v", run.Figures())
	}
	if idx := []int{run.Stages[0].Index, run.Stages[1].Index, run.Stages[3].Index}; idx[0] != 0 || idx[1] != 2 || idx[2] != 1 {
		t.Errorf("stage indexes %v, want the repeats interleaved (C=1 at 0 and 2, C=4 at 1)", idx)
	}
	for _, w := range run.Warnings {
		if w.Check == "repeat_spread" {
			t.Errorf("C=1 and C=4 differ fourfold, yet: %s", w)
		}
	}
	if run.Verdict == nil || len(run.Verdict.Steps) != 1 {
		t.Errorf("the scaling verdict is not over the two levels (every repeat of each): %+v", run.Verdict)
	}
	capped := repeatRun(t, 1, 3, "max_running: 1\n", 1, 2)
	found := false
	for _, w := range capped.Warnings {
		if w.Check == "repeat_spread" && strings.Contains(w.Text, "within the run-to-run spread") {
			found = true
		}
	}
	if !found {
		t.Errorf("no repeat_spread warning when C=2 runs one at a time: %v", capped.Warnings)
	}
}
