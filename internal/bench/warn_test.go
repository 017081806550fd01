package bench

import (
	"context"
	"math"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/workload"
)

// Steps growing 5% of the profile's time a minute (a smooth, fast drift)
// over 20 simulated minutes: every figure drifts, none is cut into change
// points, TPOT's trend holds the truth in its interval, and the verdict
// reads each trend as its move over the 17 minutes measured.
func TestSoakDriftMove(t *testing.T) {
	t.Parallel()
	run := soak(t, soakProfile(t, t.TempDir(), 1, "  step_growth_pct_per_min: 5\n"), 20*time.Minute, 1, nil)
	v := run.Stages[0].Stability
	t.Log(v.Text)
	for _, f := range v.Figures {
		if f.State != "drift" || len(f.Changes) > 0 {
			t.Errorf("%s: %s with %d change points, want a drift", f.Name, f.State, len(f.Changes))
		}
	}
	// TPOT grows by 5% of the profile's step a minute: in % of its level
	// at the first measured slice's middle, 5 / (1 + 0.05·m₀).
	m0 := (time.Duration(v.Warmup)*time.Minute + 30*time.Second).Minutes()
	want := 5 / (1 + 0.05*m0)
	if f := figure(t, v, "tpot_p50_ms"); !(f.PctPerHLo/60 <= want && want <= f.PctPerHHi/60) {
		t.Errorf("TPOT %+.2f %%/min [%+.2f, %+.2f], want %.2f inside", f.PctPerH/60, f.PctPerHLo/60, f.PctPerHHi/60, want)
	}
	if f := figure(t, v, "aggregate_tok_s"); !f.Worse || !strings.Contains(v.Text, "aggregate -") || !strings.Contains(v.Text, "% over 17m [") {
		t.Errorf("aggregate %+v: %s", f, v.Text)
	}
	if !strings.Contains(v.Text, "server memory not read") {
		t.Errorf("memory not read is not said: %s", v.Text)
	}
}

// Prompts that share a prefix on purpose (--shared-prefix 64
// --prefix-groups 4) hit the simulator's cache for exactly that prefix:
// its /metrics say so over the stage, and no warning calls TTFT
// flattered.
func TestSharedPrefixIsNotFlattery(t *testing.T) {
	t.Parallel()
	const n, groups, shared, input = 600, 4, 64, 100
	var run *analyze.Run
	synctest.Test(t, func(t *testing.T) {
		mn := memnet.New()
		ctx, stop := context.WithCancel(context.Background())
		srv := sim.New(cacheProfile(t), sim.Options{NoTrace: true})
		done := make(chan struct{})
		go func() { defer close(done); srv.Serve(ctx, mn) }()
		env := &Env{Listen: func(string) (net.Listener, error) { return mn, nil }, Dial: mn.Dial}
		var err error
		run, err = Sweep(context.Background(), SweepConfig{Command: "run", Target: Target{URL: "http://" + mn.Addr().String()},
			Workload: workload.Synthetic{InputTokens: input, OutputTokens: 4, IgnoreEOS: true, Seed: 3, SharedPrefix: shared, PrefixGroups: groups},
			Load:     Load{Concurrency: []int{1}, Requests: n, Warmup: 0, Timeout: time.Minute}, Out: filepath.Join(t.TempDir(), "r.jsonl")}, env)
		if err != nil {
			t.Fatal(err)
		}
		stop()
		<-done
	})
	s := run.Stages[0]
	if s.Server == nil || s.Server.CacheHitRate == nil {
		t.Fatalf("no hit rate read from /metrics: %+v", s.Server)
	}
	// The truth: every prompt but each group's first hits the shared
	// prefix, and nothing more.
	if want := float64((n-groups)*shared) / float64(n*input); math.Abs(*s.Server.CacheHitRate-want) > 0.02 {
		t.Errorf("hit rate %.3f over the stage, want about %.3f", *s.Server.CacheHitRate, want)
	}
	for _, w := range run.Warnings {
		if w.Check == "prefix_cache" {
			t.Errorf("a shared prefix asked for is called flattery: %s", w)
		}
	}
}
