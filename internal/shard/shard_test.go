package shard

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/schedule"
)

// Closed-loop concurrency and request counts split as evenly as possible,
// the first shards taking one more; a rate splits evenly, each shard a
// stream of its own; a trace by request, k to shard k mod N.
func TestShardSplit(t *testing.T) {
	t.Parallel()
	var conc, reqs []int
	idle := 0
	for i := range 4 {
		s := &Config{Index: i, Count: 4}
		p, rec := s.Split(runner.Plan{Index: 0, Concurrency: 10, Requests: 6, Warmup: 10})
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
	if _, rec := (&Config{Index: 3, Count: 4}).Split(runner.Plan{Concurrency: 2, Requests: 8}); !rec.Idle {
		t.Errorf("shard 3 of 4 at C=2: %+v, want idle", rec)
	}
	seeds := map[int64]bool{}
	var phases []time.Duration
	for i := range 3 {
		p, _ := (&Config{Index: i, Count: 3}).Split(runner.Plan{Rate: 9, Arrival: schedule.Constant, Requests: 30, Seed: 5})
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
	p, _ := (&Config{Index: 1, Count: 3}).Split(runner.Plan{At: at, Rate: 6})
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
		off := ClockOffset(context.Background(), dateServer(t, func() time.Time { return time.Now().Add(skew) }), "http://clock/")
		if off.Method != "http-date" || off.Error != "" {
			t.Fatalf("%+v", off)
		}
		got, u := time.Duration(off.OffsetNs), time.Duration(off.UncertaintyNs)
		if d := got - skew; d > u || d < -u || u > time.Millisecond {
			t.Errorf("offset %v ± %v, want %v within it", got, u, skew)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		off := ClockOffset(context.Background(), dateServer(t, func() time.Time { return time.Time{} }), "http://clock/")
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
		off := ClockOffset(context.Background(), dateServer(t, func() time.Time { mu.Lock(); defer mu.Unlock(); return cached }), "http://clock/")
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
	if os.Getenv("TOKPERF_REALTIME") == "" {
		t.Skip("real time: a busy machine's scheduling is its whole error; TOKPERF_REALTIME=1 runs it (.ci/run does, on its own)")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	before := timerLate()
	off := ClockOffset(context.Background(), srv.Client(), srv.URL)
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

// A shard whose barrier never fills fails with the missing shards named.
func TestBarrierNamesMissingShards(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		b := &Barrier{shard: &Config{Index: 0, Count: 3, RunID: "x", Barrier: dir, BarrierTimeout: time.Minute}, now: time.Now}
		other := &Barrier{shard: &Config{Index: 2, Count: 3, RunID: "x", Barrier: dir, BarrierTimeout: time.Minute}, now: time.Now}
		var wg sync.WaitGroup
		var err0, err2 error
		wg.Go(func() { _, err0 = b.Wait(context.Background(), 0) })
		wg.Go(func() { _, err2 = other.Wait(context.Background(), 0) })
		wg.Wait()
		if err0 == nil || !strings.Contains(err0.Error(), "shards 1 of 3 are not there") {
			t.Errorf("shard 0: %v", err0)
		}
		if err2 == nil || !strings.Contains(err2.Error(), "shards 1 of 3 are not there") {
			t.Errorf("shard 2: %v", err2)
		}
	})
	// A second run of the same id finds the first's files.
	b := &Barrier{shard: &Config{Index: 2, Count: 3, RunID: "x", Barrier: dir}, now: time.Now}
	if _, err := b.Wait(context.Background(), 0); err == nil || !strings.Contains(err.Error(), "give a new --run-id") {
		t.Errorf("a stale barrier: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "x", "stage-0", "shard-2")); err != nil {
		t.Error(err)
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
