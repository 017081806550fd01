package bench

import (
	"context"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/shard"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/workload"
)

// shardedSweep runs the same load as one process, or as n shards through
// a barrier, against one simulator (profile seed, its jitter seeded
// simSeed) in virtual time, and returns the run: the shards' files merged.
func shardedSweep(t *testing.T, simSeed uint64, n int, load func(seed int64) Load, shards ...func(*shard.Config)) *analyze.Run {
	t.Helper()
	dir := t.TempDir()
	var run *analyze.Run
	synctest.Test(t, func(t *testing.T) {
		mn := memnet.New()
		p, err := sim.LoadProfile("seed")
		if err != nil {
			t.Fatal(err)
		}
		p.Seed, p.EOSProbability = int64(simSeed), 0
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); sim.New(p, sim.Options{NoTrace: true}).Serve(ctx, mn) }()
		defer func() { stop(); <-done }()
		cfg := func(i int) SweepConfig {
			return SweepConfig{Command: "run", Target: Target{URL: "http://127.0.0.1:8000"}, Load: load(int64(simSeed)),
				Workload: workload.Synthetic{InputTokens: 16, OutputTokens: 32, IgnoreEOS: true, Seed: 1}, Out: filepath.Join(dir, fmt.Sprintf("r%d.jsonl", i))}
		}
		env := &Env{Dial: mn.Dial, Listen: func(string) (net.Listener, error) { return nil, fmt.Errorf("no listening") }}
		if n == 1 {
			if run, err = Sweep(context.Background(), cfg(0), env); err != nil {
				t.Fatal(err)
			}
			return
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		var paths []string
		for i := range n {
			c := cfg(i)
			c.Shard = &shard.Config{Index: i, Count: n, RunID: "t", Barrier: filepath.Join(dir, "barrier"), Lead: 300 * time.Millisecond}
			for _, f := range shards {
				f(c.Shard)
			}
			paths = append(paths, c.Out)
			wg.Go(func() { _, errs[i] = Sweep(context.Background(), c, env) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		runs, err := ReadRuns(context.Background(), paths, false)
		if err != nil {
			t.Fatal(err)
		}
		run = runs[0]
	})
	return run
}

// Two and four shards against one simulator give the figures of one
// process with the same total load: tokens exactly, aggregate and the
// TTFT and ITL percentiles within the one process's spread over seeds of
// the simulator's jitter (and of the arrivals), widened by the spread's
// width or 2%, whichever is more.
func TestShardsMergeLikeOneProcess(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("sweeps in virtual time")
	}
	t.Run("closed loop", func(t *testing.T) {
		mergeLikeOne(t, func(int64) Load {
			l := DefaultLoad([]int{10, 24})
			l.Requests = 96
			return l
		})
	})
	t.Run("open loop", func(t *testing.T) {
		// Each shard its own Poisson stream: one process's spread is over
		// the arrivals' seeds too.
		mergeLikeOne(t, func(seed int64) Load {
			l := DefaultLoad([]int{1})
			l.Rates, l.Requests, l.Seed, l.Warmup = []float64{40}, 200, seed, 0
			return l
		})
	})
}

func mergeLikeOne(t *testing.T, load func(seed int64) Load) {
	type fig struct{ agg, ttft50, ttft99, itl50, itl99 float64 }
	figs := func(r *analyze.Run, i int) fig {
		s := r.Stages[i]
		return fig{s.AggregateTokS, s.TTFT.P50, s.TTFT.P99, s.ITL.P50, s.ITL.P99}
	}
	var single []*analyze.Run
	for seed := range uint64(4) {
		single = append(single, shardedSweep(t, 20+seed, 1, load))
	}
	for _, n := range []int{2, 4} {
		merged := shardedSweep(t, 20, n, load)
		if merged.Sharding == nil || merged.Sharding.Count != n || len(merged.Stages) != len(single[0].Stages) {
			t.Fatalf("%d shards: %+v", n, merged.Sharding)
		}
		for i, st := range merged.Stages {
			one := single[0].Stages[i]
			if st.Concurrency != one.Concurrency || st.Requests != one.Requests || st.OK != one.OK || st.OutputTokens != one.OutputTokens || st.PromptTokens != one.PromptTokens {
				t.Errorf("%d shards, C=%d: %d requests, %d ok, %d output and %d prompt tokens; one process: C=%d, %d, %d, %d, %d",
					n, st.Concurrency, st.Requests, st.OK, st.OutputTokens, st.PromptTokens, one.Concurrency, one.Requests, one.OK, one.OutputTokens, one.PromptTokens)
			}
			got := figs(merged, i)
			lo, hi := figs(single[0], i), figs(single[0], i)
			for _, r := range single[1:] {
				f := figs(r, i)
				lo = fig{min(lo.agg, f.agg), min(lo.ttft50, f.ttft50), min(lo.ttft99, f.ttft99), min(lo.itl50, f.itl50), min(lo.itl99, f.itl99)}
				hi = fig{max(hi.agg, f.agg), max(hi.ttft50, f.ttft50), max(hi.ttft99, f.ttft99), max(hi.itl50, f.itl50), max(hi.itl99, f.itl99)}
			}
			for _, c := range []struct {
				name      string
				g, lo, hi float64
			}{{"aggregate", got.agg, lo.agg, hi.agg}, {"TTFT p50", got.ttft50, lo.ttft50, hi.ttft50}, {"TTFT p99", got.ttft99, lo.ttft99, hi.ttft99},
				{"ITL p50", got.itl50, lo.itl50, hi.itl50}, {"ITL p99", got.itl99, lo.itl99, hi.itl99}} {
				// Virtual time leaves the jitter as one process's only
				// randomness, a spread of under 1%; a shard's fixed share of
				// a stage's requests drains on its own, about 1% more.
				slack := max(c.hi-c.lo, 0.02*c.hi)
				t.Logf("%d shards, C=%d %s: %.3f, one process %.3f to %.3f", n, st.Concurrency, c.name, c.g, c.lo, c.hi)
				if c.g < c.lo-slack || c.g > c.hi+slack || math.IsNaN(c.g) {
					t.Errorf("%d shards, C=%d: %s %.3f outside one process's %.3f to %.3f", n, st.Concurrency, c.name, c.g, c.lo, c.hi)
				}
			}
		}
		for _, w := range merged.Warnings {
			if strings.HasPrefix(w.Check, "shard_") {
				t.Errorf("%d shards in virtual time: %s", n, w)
			}
		}
	}
}

// With --start-at and no barrier, a one-stage run's shards begin its
// measured requests at that time, on the server's clock.
func TestShardsStartAt(t *testing.T) {
	t.Parallel()
	var startAt time.Time
	run := shardedSweep(t, 1, 3, func(int64) Load {
		l := DefaultLoad([]int{6})
		l.Requests = 24
		return l
	}, func(s *shard.Config) {
		if startAt.IsZero() {
			startAt = time.Now().Add(20 * time.Second) // virtual: the bubble's clock
		}
		s.Barrier, s.StartAt, s.RunID = "", startAt, shard.DefaultRunID(startAt)
	})
	if run.Sharding == nil || run.Sharding.RunID != shard.DefaultRunID(startAt) || len(run.Sharding.Rows) != 3 {
		t.Fatalf("%+v", run.Sharding)
	}
	for _, r := range run.Sharding.Rows {
		if r.StartLateMs == nil || *r.StartLateMs < 0 || *r.StartLateMs > 5 || r.Requests != 8 {
			t.Errorf("shard %d: started %v ms after --start-at, %d requests; want 0 to 5 ms, 8", r.Shard, r.StartLateMs, r.Requests)
		}
	}
	if s := run.Stages[0]; s.Requests != 24 || s.Concurrency != 6 {
		t.Errorf("merged C=%d, %d requests; want C=6, 24", s.Concurrency, s.Requests)
	}
}

// One shard's file alone is read as its share of the run, and said so;
// with its run's other files it is merged (shard's tests hold the merge).
func TestShardAloneIsItsShare(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var paths []string
	for i := range 2 {
		setup := record.Setup{Command: "run", URL: "http://server:8000", Model: "m", Endpoint: "completions", Load: record.Load{Concurrency: []int{2}},
			Shard: &record.Shard{Index: i, Count: 2, RunID: "r", Stages: []record.ShardStage{{Stage: 0, Concurrency: 2, MyConcurrency: 1}}}}
		path := filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i))
		w, err := results.Create(path, results.Header{Tool: "tokperf", StartUnixNs: time.Now().UnixNano(), Setup: setup})
		if err != nil {
			t.Fatal(err)
		}
		for k := range 3 + i {
			r := record.New(2*k + i)
			r.Concurrency, r.Status, r.OutputTokens = 1, record.StatusOK, 4
			r.Sent, r.FirstToken, r.LastToken, r.Done = 0, time.Millisecond, 4*time.Millisecond, 5*time.Millisecond
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(false); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	alone, err := ReadRuns(context.Background(), paths[1:], false)
	if err != nil {
		t.Fatal(err)
	}
	if len(alone) != 1 || alone[0].Sharding != nil || alone[0].Stages[0].Requests != 4 {
		t.Fatalf("one shard alone: %d runs, want 1 of its own 4 requests", len(alone))
	}
	if ws := alone[0].Warnings; len(ws) == 0 || ws[len(ws)-1].Check != "shard_alone" || !strings.Contains(ws[len(ws)-1].Text, "shard 1 of 2 of run r") {
		t.Errorf("one shard alone: warnings %v, want shard_alone naming shard 1 of 2", ws)
	}
	both, err := ReadRuns(context.Background(), paths, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(both) != 1 || both[0].Sharding == nil || both[0].Stages[0].Requests != 7 {
		t.Errorf("both shards: %d runs, want 1 merged of 7 requests", len(both))
	}
}
