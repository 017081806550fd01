// Package runner is the load loop: it decides when each request starts
// (closed-loop slots or open-loop arrivals), hands it to a Backend, and
// passes every finished Record to a Sink, warm-up included and marked.
// Context cancellation is the only way to stop it; what finished is kept.
//
//	r := runner.Runner{Backend: b, Source: w.Request, Sink: write, Clock: record.NewClock()}
//	recs := r.Stage(ctx, runner.Plan{Concurrency: 4, Requests: 8})
package runner

import (
	"context"
	"sync"
	"time"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/schedule"
)

// Backend sends one request and fills its record.
type Backend interface {
	// Do sends req, times it on clock and fills rec (Sent through Done,
	// chunks, counts, status). Failures are a status, never a panic.
	Do(ctx context.Context, clock record.Clock, req record.Request, rec *record.Record)
}

// Source builds the i-th request of a run.
type Source func(i int) record.Request

// Sink receives every finished record, one at a time, as it finishes.
type Sink func(record.Record)

// Plan is one stage of load: how many requests, when, at what concurrency.
type Plan struct {
	Index       int
	Concurrency int     // closed loop: requests in flight; open loop: a cap (0: none)
	Rate        float64 // open loop: requests/s; 0 for closed loop
	Arrival     schedule.Arrival
	Requests    int           // measured requests; 0 with Duration
	Duration    time.Duration // start requests for this long instead
	Warmup      int           // warm-up requests before measuring, at the stage's concurrency
	Timeout     time.Duration // per request; 0: none
	Seed        int64
}

// Runner runs stages against one backend.
type Runner struct {
	Backend Backend
	Source  Source
	Sink    Sink
	Clock   record.Clock

	mu   sync.Mutex
	next int // request index across the run
}

func (r *Runner) take() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	return r.next - 1
}

// Stage runs warm-up then the measured requests of st and returns the
// measured records in the order they finished. It returns early, with what
// finished, when ctx is done.
func (r *Runner) Stage(ctx context.Context, st Plan) []record.Record {
	var out []record.Record
	r.Each(ctx, st, func(rec *record.Record) { out = append(out, *rec) })
	return out
}

// Each runs st like Stage but keeps nothing: every measured record goes to
// each as it finishes, after the Sink, from one goroutine.
func (r *Runner) Each(ctx context.Context, st Plan, each func(*record.Record)) {
	// Records go to the sink from one goroutine of their own, so a slow
	// sink (a file write) never delays the next request of a slot.
	queue := make(chan record.Record, 4096)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for rec := range queue {
			if r.Sink != nil {
				r.Sink(rec)
			}
			if !rec.Warmup && each != nil {
				each(&rec)
			}
		}
	}()
	emit := func(rec record.Record) { queue <- rec }
	if st.Warmup > 0 {
		c := st.Concurrency
		if c <= 0 {
			c = st.Warmup
		}
		r.closed(ctx, st, min(c, st.Warmup), st.Warmup, 0, true, emit)
	}
	if ctx.Err() == nil {
		if st.Rate > 0 {
			r.open(ctx, st, emit)
		} else {
			r.closed(ctx, st, st.Concurrency, st.Requests, st.Duration, false, emit)
		}
	}
	close(queue)
	<-drained
}

// one sends request i and emits its record.
func (r *Runner) one(ctx context.Context, st Plan, scheduled time.Duration, warmup bool, emit func(record.Record)) record.Record {
	i := r.take()
	rec := record.New(i)
	rec.Stage, rec.Concurrency, rec.Rate, rec.Warmup = st.Index, st.Concurrency, st.Rate, warmup
	rec.Scheduled = scheduled
	req := r.Source(i)
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if st.Timeout > 0 {
		rctx, cancel = context.WithTimeoutCause(ctx, st.Timeout, record.ErrTimeout)
	}
	r.Backend.Do(rctx, r.Clock, req, &rec)
	cancel()
	emit(rec)
	return rec
}

// closed keeps c requests in flight until n have started, or until d has
// passed when n is 0. A slot's next request is scheduled when it frees.
func (r *Runner) closed(ctx context.Context, st Plan, c, n int, d time.Duration, warmup bool, emit func(record.Record)) {
	if c <= 0 {
		c = 1
	}
	start := r.Clock.Now()
	var mu sync.Mutex
	started := 0
	claim := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil || (n > 0 && started >= n) || (n == 0 && r.Clock.Now()-start >= d) {
			return false
		}
		started++
		return true
	}
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			scheduled := start
			for claim() {
				rec := r.one(ctx, st, scheduled, warmup, emit)
				scheduled = rec.Done
			}
		})
	}
	wg.Wait()
}

// open starts requests at their scheduled arrivals, never waiting for
// earlier ones; with a concurrency cap a request that finds no free slot
// waits and starts late, and its record shows it.
func (r *Runner) open(ctx context.Context, st Plan, emit func(record.Record)) {
	arrivals := schedule.Arrivals(st.Arrival, st.Rate, st.Requests, st.Duration, st.Seed)
	var slots chan struct{}
	if st.Concurrency > 0 {
		slots = make(chan struct{}, st.Concurrency)
	}
	start := r.Clock.Now()
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, at := range arrivals {
		scheduled := start + at
		if wait := scheduled - r.Clock.Now(); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
		if slots != nil {
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
		wg.Go(func() {
			r.one(ctx, st, scheduled, false, emit)
			if slots != nil {
				<-slots
			}
		})
	}
}
