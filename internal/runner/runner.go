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
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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
	// At, when set, is each request's send offset from the stage's start
	// (a trace's timestamps): an open loop of len(At) requests whatever
	// Rate, Requests and Duration say (Rate is then only recorded).
	At       []time.Duration
	Requests int           // measured requests; 0: as many as Duration allows
	Duration time.Duration // start requests for this long (with Requests: whichever ends first)
	Warmup   int           // warm-up requests before measuring, at the stage's concurrency
	Timeout  time.Duration // per request; 0: none
	Seed     int64
	// Think is the wait between a conversation's turns: after one ends,
	// before the next is sent (Runner.Conversations).
	Think time.Duration
	// Repeat is which repeat of its level this stage is (--repeat), from 0.
	Repeat int
	// Phase delays every open-loop arrival of a rate (not a trace's At):
	// a shard's constant arrivals fall between the other shards'.
	Phase time.Duration
}

// Runner runs stages against one backend.
type Runner struct {
	Backend Backend
	Source  Source
	Sink    Sink
	Clock   record.Clock
	// Conversations, when set, makes a closed-loop stage's slots hold
	// conversations instead of requests (Requests and Warmup count
	// conversations): see talk.
	Conversations Conversations
	// GiveUp is how many requests in a row may get no response at all
	// (refused, reset before a byte) before the stage stops with
	// ErrServerGone: a dead server is not hammered. 0 is DefaultGiveUp;
	// negative never gives up.
	GiveUp int
	// Shard and Shards, when Shards > 1, make this runner shard Shard of
	// Shards of one run: its k-th request (and conversation) from 0 takes
	// the index k*Shards+Shard, so the shards' ids never meet.
	Shard, Shards int
	// Gate, when set, is waited on after a stage's warm-up and before its
	// measured requests (the shards' common start); an error ends the
	// stage there, and Each returns it.
	Gate func(ctx context.Context, st Plan) error

	mu     sync.Mutex
	next   int          // request index across the run
	conv   int          // conversation index across the run
	silent atomic.Int64 // requests in a row with no response
}

// DefaultGiveUp is Runner.GiveUp's default.
const DefaultGiveUp = 20

// ErrServerGone ends a stage whose server stopped answering.
var ErrServerGone = errors.New("the server stopped answering")

// Backoff bounds how fast a closed-loop slot re-sends after a request got
// no response or was told to slow down (HTTP 429, 503): it waits
// MinBackoff, doubling with each such request in a row up to MaxBackoff,
// so a stage never sends faster than a live server would let it. A
// server's Retry-After (Record.RetryAfter) replaces the doubling wait: the
// slot waits as long as the server asked, but never past the stage's end.
var (
	MinBackoff = 10 * time.Millisecond
	MaxBackoff = time.Second
)

// noResponse is a request that got nothing back: no response byte.
func noResponse(rec *record.Record) bool {
	return rec.FirstByte == record.Unset && !rec.OK() && rec.Status != record.StatusCancelled && rec.Status != record.StatusTimeout
}

// throttled is a request after which a slot should wait before the next.
func throttled(rec *record.Record) bool {
	return noResponse(rec) || rec.HTTPCode == 429 || rec.HTTPCode == 503
}

// backoff is the wait after k throttled requests in a row, the last of
// them rec: the server's Retry-After when it gave one, else doubling.
func backoff(k int, rec *record.Record) time.Duration {
	if k <= 0 {
		return 0
	}
	if rec.RetryAfter > 0 {
		return rec.RetryAfter
	}
	d := MinBackoff << min(k-1, 30)
	return min(d, MaxBackoff)
}

// Next is the index the next request will take: a stage's requests are
// Next() onwards, for a source that builds them ahead.
func (r *Runner) Next() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.index(r.next)
}

func (r *Runner) take() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	return r.index(r.next - 1)
}

// index is the index of this runner's k-th request or conversation.
func (r *Runner) index(k int) int {
	if r.Shards > 1 {
		return k*r.Shards + r.Shard
	}
	return k
}

// Stage runs warm-up then the measured requests of st and returns the
// measured records in the order they finished. It returns early, with what
// finished, when ctx is done or the server stopped answering.
func (r *Runner) Stage(ctx context.Context, st Plan) []record.Record {
	var out []record.Record
	r.Each(ctx, st, func(rec *record.Record) { out = append(out, *rec) })
	return out
}

// Each runs st like Stage but keeps nothing: every measured record goes to
// each as it finishes, after the Sink, from one goroutine. It returns an
// error wrapping ErrServerGone when the stage stopped because the server
// stopped answering.
func (r *Runner) Each(ctx context.Context, st Plan, each func(*record.Record)) error {
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	r.silent.Store(0)
	// Records go to the sink from one goroutine of their own, so a slow
	// sink (a file write) never delays the next request of a slot.
	queue := make(chan record.Record, queueLen(st.Concurrency))
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
	giveUp := int64(r.GiveUp)
	if giveUp == 0 {
		giveUp = DefaultGiveUp
	}
	emit := func(rec record.Record) {
		queue <- rec
		switch {
		case !noResponse(&rec):
			r.silent.Store(0)
		case giveUp > 0:
			if n := r.silent.Add(1); n >= giveUp {
				stop(fmt.Errorf("%w: %d requests in a row got no response (the last: %s)", ErrServerGone, n, rec.Error))
			}
		}
	}
	if st.Warmup > 0 {
		c := st.Concurrency
		if c <= 0 {
			c = st.Warmup
		}
		r.closed(ctx, st, min(c, st.Warmup), st.Warmup, 0, true, emit)
	}
	var gated error
	if r.Gate != nil && ctx.Err() == nil {
		gated = r.Gate(ctx, st)
	}
	if ctx.Err() == nil && gated == nil {
		if st.Rate > 0 || st.At != nil {
			r.open(ctx, st, emit)
		} else {
			r.closed(ctx, st, st.Concurrency, st.Requests, st.Duration, false, emit)
		}
	}
	close(queue)
	<-drained
	if gated != nil {
		return gated
	}
	if err := context.Cause(ctx); errors.Is(err, ErrServerGone) {
		return err
	}
	return nil
}

// queueLen is how many finished records wait for the sink, at most, before
// a slot that finishes one more waits too: four per slot (each slot
// finishes one per request), at least 256 (an open loop without a cap),
// at most 4096. A record is about 400 bytes and the queue is one block,
// each slot of which is written in turn: 4096 for every stage would hold
// 1.7 MB resident however few streams run.
func queueLen(concurrency int) int { return min(4096, max(256, 4*concurrency)) }

// one sends request i and emits its record.
func (r *Runner) one(ctx context.Context, st Plan, scheduled, waited time.Duration, warmup bool, emit func(record.Record)) record.Record {
	return r.send(ctx, st, r.take(), scheduled, waited, warmup, emit, r.Source, nil)
}

// send builds request i with source, marks its record with mark (when
// set), sends it and emits the record; waited is the slot's wait before it.
func (r *Runner) send(ctx context.Context, st Plan, i int, scheduled, waited time.Duration, warmup bool, emit func(record.Record), source Source, mark func(*record.Record)) record.Record {
	rec := record.New(i)
	rec.Stage, rec.Concurrency, rec.Rate, rec.Warmup, rec.Repeat = st.Index, st.Concurrency, st.Rate, warmup, st.Repeat
	rec.Scheduled, rec.Backoff = scheduled, waited
	if mark != nil {
		mark(&rec)
	}
	req := source(i)
	rec.AskedPromptTokens, rec.AskedPromptSource = req.PromptTokens, req.PromptSource
	rctx, cancel := ctx, context.CancelFunc(func() {})
	if st.Timeout > 0 {
		rctx, cancel = context.WithTimeoutCause(ctx, st.Timeout, record.ErrTimeout)
	}
	r.Backend.Do(rctx, r.Clock, req, &rec)
	cancel()
	emit(rec)
	return rec
}

// closed keeps c requests in flight until n have started or d has passed,
// whichever comes first (a zero n or d is no limit). A slot's next request is scheduled when it frees.
func (r *Runner) closed(ctx context.Context, st Plan, c, n int, d time.Duration, warmup bool, emit func(record.Record)) {
	if c <= 0 {
		c = 1
	}
	if a, ok := r.Conversations.(Sessions); ok {
		r.agents(ctx, st, a, c, n, d, warmup, emit)
		return
	}
	if r.Conversations != nil {
		r.talk(ctx, st, c, n, d, warmup, emit)
		return
	}
	start := r.Clock.Now()
	claim := r.claims(ctx, start, n, d)
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			scheduled, waited := start, time.Duration(0)
			k := 0 // throttled requests in a row on this slot
			for claim() {
				rec := r.one(ctx, st, scheduled, waited, warmup, emit)
				scheduled, waited = rec.Done, 0
				if !throttled(&rec) {
					k = 0
					continue
				}
				// The slot waits before its next request; the wait is not
				// the client's queue, so the next is scheduled after it.
				k++
				wait := backoff(k, &rec)
				if d > 0 {
					wait = min(wait, max(start+d-r.Clock.Now(), 0)) // never past the stage's end
				}
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
				}
				scheduled = r.Clock.Now()
				waited = scheduled - rec.Done
			}
		})
	}
	wg.Wait()
}

// claims is a slot's leave to start one more: until n have started or d
// has passed since start, whichever comes first (a zero n or d is no
// limit; both zero allow none), and never once ctx is done.
func (r *Runner) claims(ctx context.Context, start time.Duration, n int, d time.Duration) func() bool {
	var mu sync.Mutex
	started := 0
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() != nil || (n > 0 && started >= n) || (d > 0 && r.Clock.Now()-start >= d) || (n == 0 && d == 0) {
			return false
		}
		started++
		return true
	}
}

// open starts requests at their scheduled arrivals, never waiting for
// earlier ones; with a concurrency cap a request that finds no free slot
// waits and starts late, and its record shows it.
func (r *Runner) open(ctx context.Context, st Plan, emit func(record.Record)) {
	arrivals := st.At
	if arrivals == nil {
		arrivals = schedule.Arrivals(st.Arrival, st.Rate, st.Requests, st.Duration, st.Seed)
		for i := range arrivals {
			arrivals[i] += st.Phase
		}
	}
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
		// The index is taken in arrival order: the i-th arrival sends the
		// source's i-th request (a trace's i-th line at its timestamp).
		i := r.take()
		wg.Go(func() {
			r.send(ctx, st, i, scheduled, 0, false, emit, r.Source, nil)
			if slots != nil {
				<-slots
			}
		})
	}
}
