package bench

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/summary"
	"github.com/tokperf/tokperf/internal/workload"
)

// --until-saturated adds the levels nextLevel asks for, one after the
// other, and stops where it says: each added stage's concurrency is the
// policy's answer to the stages before it, and the last is one the policy
// called last (or after which it asks for none). In virtual time, against
// the embedded simulator.
func TestUntilSaturatedFollowsNextLevel(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "r.jsonl")
	synctest.Test(t, func(t *testing.T) {
		mn := memnet.New()
		p, err := sim.LoadProfile("seed")
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); sim.New(p, sim.Options{NoTrace: true}).Serve(ctx, mn) }()
		defer func() { stop(); <-done }()
		load := DefaultLoad([]int{1, 2})
		load.UntilSaturated, load.MaxConcurrency, load.Requests = true, 64, 32
		cfg := SweepConfig{Command: "sweep", Target: Target{URL: "http://127.0.0.1:8000"}, Load: load,
			Workload: workload.Synthetic{InputTokens: 16, OutputTokens: 16, IgnoreEOS: true, Seed: 1}, Out: out}
		env := &Env{Dial: mn.Dial, Listen: func(string) (net.Listener, error) { return nil, fmt.Errorf("no listening") }}
		run, err := Sweep(context.Background(), cfg, env)
		if err != nil {
			t.Fatal(err)
		}
		var levels []summary.Stage
		for _, s := range run.Stages {
			levels = append(levels, s.Stage)
		}
		slices.SortFunc(levels, func(a, b summary.Stage) int { return a.Index - b.Index }) // in the order they ran
		if len(levels) < 3 {
			t.Fatalf("%d stages: the policy added none after C=1 and 2", len(levels))
		}
		for k := 2; k < len(levels); k++ {
			next, last, _ := nextLevel(levels[:k], load, run.Setup.SLO, analyze.Cap{})
			if levels[k].Concurrency != next {
				t.Errorf("stage %d: C=%d, the policy asked for C=%d after %d stages", k, levels[k].Concurrency, next, k)
			}
			if last && k != len(levels)-1 {
				t.Errorf("stage %d (C=%d) was the last the policy asked for, yet %d more ran", k, next, len(levels)-1-k)
			}
		}
		if next, last, _ := nextLevel(levels[:len(levels)-1], load, run.Setup.SLO, analyze.Cap{}); !last {
			if next, _, _ := nextLevel(levels, load, run.Setup.SLO, analyze.Cap{}); next != 0 {
				t.Errorf("the sweep stopped at C=%d, where the policy asks for C=%d", levels[len(levels)-1].Concurrency, next)
			}
		} else if next == 0 {
			t.Errorf("the last stage ran after the policy asked for none")
		}
	})
}
