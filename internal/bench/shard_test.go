package bench

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/schedule"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/workload"
)

// Closed-loop concurrency and request counts split as evenly as possible,
// the first shards taking one more; a rate splits evenly, each shard a
// stream of its own; a trace by request, k to shard k mod N.
func TestShardSplit(t *testing.T) {
	t.Parallel()
	var conc, reqs []int
	idle := 0
	for i := range 4 {
		s := &Shard{Index: i, Count: 4}
		p, rec := s.split(runner.Plan{Index: 0, Concurrency: 10, Requests: 6, Warmup: 10})
		conc, reqs = append(conc, p.Concurrency), append(reqs, p.Requests)
		if rec.Idle {
			idle++
		}
		if rec.Concurrency != 10 || rec.MyConcurrency != p.Concurrency || rec.MyWarmup != p.Warmup {
			t.Errorf("shard %d: record %+v of plan %+v", i, rec, p)
		}
	}
	if fmt.Sprint(conc) != "[3 3 2 2]" || fmt.Sprint(reqs) != "[1 2 1 2]" || idle != 0 {
		t.Errorf("C=10, 6 requests over 4 shards: concurrency %v, requests %v, %d idle; want [3 3 2 2], [1 2 1 2] (6 × 3/10, …: with the slots), none", conc, reqs, idle)
	}
	// C=2 over 4: two shards have no slot and only take part in the start.
	if _, rec := (&Shard{Index: 3, Count: 4}).split(runner.Plan{Concurrency: 2, Requests: 8}); !rec.Idle {
		t.Errorf("shard 3 of 4 at C=2: %+v, want idle", rec)
	}
	seeds := map[int64]bool{}
	var phases []time.Duration
	for i := range 3 {
		p, _ := (&Shard{Index: i, Count: 3}).split(runner.Plan{Rate: 9, Arrival: schedule.Constant, Requests: 30, Seed: 5})
		if p.Rate != 3 || p.Requests != 10 {
			t.Errorf("shard %d: rate %g, %d requests; want 3/s and 10", i, p.Rate, p.Requests)
		}
		seeds[p.Seed] = true
		phases = append(phases, p.Phase)
	}
	if len(seeds) != 3 || phases[1] != time.Second/9 || phases[2] != 2*time.Second/9 {
		t.Errorf("seeds %v, phases %v: want three seeds and constant arrivals interleaved 1/9 s apart", seeds, phases)
	}
	at := []time.Duration{0, 1, 2, 3, 4, 5, 6}
	p, _ := (&Shard{Index: 1, Count: 3}).split(runner.Plan{At: at, Rate: 6})
	if fmt.Sprint(p.At) != "[1ns 4ns]" || p.Requests != 2 {
		t.Errorf("trace requests of shard 1/3: %v, want the 2nd and 5th (k mod 3 = 1)", p.At)
	}
}

// dateServer serves Date headers from date() over an in-memory network,
// inside the test's bubble, and returns a client of it.
func dateServer(t *testing.T, date func() time.Time) *http.Client {
	t.Helper()
	mn := memnet.New()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d := date(); d.IsZero() {
			w.Header()["Date"] = nil // none at all
		} else {
			w.Header().Set("Date", d.UTC().Format(http.TimeFormat))
		}
	})}
	go srv.Serve(mn)
	t.Cleanup(func() { srv.Close() })
	return &http.Client{Transport: &http.Transport{DialContext: mn.Dial}}
}

// The clock offset estimate from Date headers finds a server whose clock
// is 1.3 s ahead within its stated uncertainty (here, in virtual time,
// the fine passes' 200 µs between probes); a server without a Date header
// gives none, saying why; nor does one that refreshes a cached Date on a
// timer of its own (uvicorn, under vLLM and SGLang), whose edges lag.
func TestClockOffsetFromDateHeaders(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		skew := 1300 * time.Millisecond
		off := clockOffset(context.Background(), dateServer(t, func() time.Time { return time.Now().Add(skew) }), "http://clock/")
		if off.Method != "http-date" || off.Error != "" {
			t.Fatalf("%+v", off)
		}
		got, u := time.Duration(off.OffsetNs), time.Duration(off.UncertaintyNs)
		if d := got - skew; d > u || d < -u || u > time.Millisecond {
			t.Errorf("offset %v ± %v, want %v within it", got, u, skew)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		off := clockOffset(context.Background(), dateServer(t, func() time.Time { return time.Time{} }), "http://clock/")
		if off.Method != "none" || !strings.Contains(off.Error, "no Date header") {
			t.Errorf("no Date: %+v", off)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// uvicorn's Date: refreshed every ten 100 ms ticks, each a little
		// over 100 ms, so it turns late and later.
		var mu sync.Mutex
		cached := time.Now()
		stop := make(chan struct{})
		go func() {
			for {
				select {
				case <-time.After(1007 * time.Millisecond):
				case <-stop:
					return
				}
				mu.Lock()
				cached = time.Now()
				mu.Unlock()
			}
		}()
		off := clockOffset(context.Background(), dateServer(t, func() time.Time { mu.Lock(); defer mu.Unlock(); return cached }), "http://clock/")
		close(stop)
		if off.Method != "none" || off.OffsetNs != 0 || !strings.Contains(off.Error, "refreshes it on a timer") {
			t.Errorf("a timer's Date: %+v", off)
		}
	})
}

// An HTTP server's own Date over loopback in real time: the estimate of
// its clock (this machine's) is 0 within its uncertainty.
//
// Serial: real time: a clock offset within a probe's round trip.
func TestClockOffsetLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("2.5 s of real time")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	before := timerLate()
	off := clockOffset(context.Background(), srv.Client(), srv.URL)
	late := max(before, timerLate())
	got, u := time.Duration(off.OffsetNs), time.Duration(off.UncertaintyNs)
	t.Logf("offset %v ± %v over %d probes; timers here wake up to %v late", got, u, off.Probes, late)
	// The interval is a probe's round trip, which a busy machine widens
	// by how late it wakes a goroutine: 60 ms on an idle one, plus four
	// times the lateness measured around the probes.
	if off.Method != "http-date" || got > u+time.Millisecond || got < -u-time.Millisecond || u > 60*time.Millisecond+4*late {
		t.Errorf("%+v: want 0 within the uncertainty", off)
	}
}

// shardedSweep runs the same load as one process, or as n shards through
// a barrier, against one simulator (profile seed, its jitter seeded
// simSeed) in virtual time, and returns the run: the shards' files merged.
func shardedSweep(t *testing.T, simSeed uint64, n int, load func(seed int64) Load, shard ...func(*Shard)) *analyze.Run {
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
			c.Shard = &Shard{Index: i, Count: n, RunID: "t", Barrier: filepath.Join(dir, "barrier"), Lead: 300 * time.Millisecond}
			for _, f := range shard {
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

// A shard whose barrier never fills fails with the missing shards named.
func TestBarrierNamesMissingShards(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		b := &barrier{shard: &Shard{Index: 0, Count: 3, RunID: "x", Barrier: dir, BarrierTimeout: time.Minute}, now: time.Now}
		other := &barrier{shard: &Shard{Index: 2, Count: 3, RunID: "x", Barrier: dir, BarrierTimeout: time.Minute}, now: time.Now}
		var wg sync.WaitGroup
		var err0, err2 error
		wg.Go(func() { _, err0 = b.wait(context.Background(), 0) })
		wg.Go(func() { _, err2 = other.wait(context.Background(), 0) })
		wg.Wait()
		if err0 == nil || !strings.Contains(err0.Error(), "shards 1 of 3 are not there") {
			t.Errorf("shard 0: %v", err0)
		}
		if err2 == nil || !strings.Contains(err2.Error(), "shards 1 of 3 are not there") {
			t.Errorf("shard 2: %v", err2)
		}
	})
	// A second run of the same id finds the first's files.
	b := &barrier{shard: &Shard{Index: 2, Count: 3, RunID: "x", Barrier: dir}, now: time.Now}
	if _, err := b.wait(context.Background(), 0); err == nil || !strings.Contains(err.Error(), "give a new --run-id") {
		t.Errorf("a stale barrier: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x", "stage-0", "shard-2")); err != nil {
		t.Error(err)
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
	}, func(s *Shard) {
		if startAt.IsZero() {
			startAt = time.Now().Add(20 * time.Second) // virtual: the bubble's clock
		}
		s.Barrier, s.StartAt, s.RunID = "", startAt, DefaultRunID(startAt)
	})
	if run.Sharding == nil || run.Sharding.RunID != DefaultRunID(startAt) || len(run.Sharding.Rows) != 3 {
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

// timerLate is how late this machine wakes a goroutine whose 1 ms timer
// fired: the worst of 20 tries. Real-time tests widen their margins by it
// (a machine shared with other work wakes timers tens of ms late).
func timerLate() time.Duration {
	var worst time.Duration
	for range 20 {
		start := time.Now()
		time.Sleep(time.Millisecond)
		worst = max(worst, time.Since(start)-time.Millisecond)
	}
	return worst
}
