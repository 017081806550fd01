package sim

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Job is one generation admitted to the engine.
type Job struct {
	PromptTokens int
	MaxTokens    int
	// Length is where the model would stop on its own (EOS); the output is
	// min(Length, MaxTokens) tokens. Set it to MaxTokens to ignore EOS.
	Length int
	// Blocks are the prompt's chained block hashes, for the prefix cache
	// (blockHashes); nil when the profile has none.
	Blocks []uint64
	// Reply are the block hashes of the prompt followed by its whole
	// output, cached when the request ends (a cancelled one adds none);
	// nil: only the prompt's are.
	Reply []uint64
	// Acceptance, when Accept is set, is this request's speculative
	// acceptance instead of the profile's (Spec.AcceptanceRepetitive).
	Acceptance float64
	Accept     bool
}

// Event is one chunk's worth of engine output for a request.
type Event struct {
	At     time.Time // when the engine step that made it ended
	Tokens int       // new tokens
	Total  int       // tokens so far
	Done   bool
	Finish string // on Done: "length" or "stop"
	// VerifySteps counts the engine steps that produced tokens (speculative
	// decoding reports completion_tokens / verify steps as accept length).
	VerifySteps int
	// Cached is how many prompt tokens the prefix cache supplied.
	Cached int
}

// Stream carries one request's events from the engine to its handler. The
// engine never blocks on a slow reader: events queue until taken.
type Stream struct {
	job    Job
	notify chan struct{}
	// sink, when set, takes each event as the engine makes it instead of
	// the queue (Simulate, which reads in the engine's own goroutine).
	sink func(Event)

	mu     sync.Mutex
	events []Event

	// Owned by the engine goroutine.
	queued, admitted time.Time
	prefilled        int
	cached           int
	generated        int
	pending          int
	sinceEmit        int
	steps            int
	kv               int
	gone             bool

	// The late steps this request was running in, and the worst of them
	// (written by the engine, read by the trace when the request ends).
	lateSteps atomic.Int64
	worstLate atomic.Int64
}

// Admitted is when the request got a slot in the running set; it is set
// before the first event, so read it after taking one.
func (s *Stream) Admitted() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.admitted
}

// Ready is signalled when events may be waiting.
func (s *Stream) Ready() <-chan struct{} { return s.notify }

// Take appends the waiting events to dst and returns it.
func (s *Stream) Take(dst []Event) []Event {
	s.mu.Lock()
	dst = append(dst, s.events...)
	s.events = s.events[:0]
	s.mu.Unlock()
	return dst
}

func (s *Stream) push(e Event) {
	if s.sink != nil {
		s.sink(e) // Simulate: no reader goroutine to wake
		return
	}
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Meters are the engine's gauges and counters, for /metrics.
type Meters struct {
	Running, Waiting, KVUsed        atomic.Int64
	PromptTotal, GenTotal, Finished atomic.Int64
	SpecDrafts, SpecDraftTokens     atomic.Int64
	SpecAccepted                    atomic.Int64
	lastStepTokens, lastStepNanos   atomic.Int64
	// Prompt tokens looked up in the prefix cache, and found there.
	CacheQueries, CacheHits atomic.Int64
}

// Engine is the continuous-batching scheduler in real time: a loop of
// steps over the running set (batch), admitting waiting requests while
// slots and KV space allow.
type Engine struct {
	Meters
	p      *Profile
	b      *batch // engine goroutine only
	in     chan *Stream
	cancel chan *Stream
	done   chan struct{}
	start  time.Time // the server's start: degradation is timed from it

	// Steps run, and how many of them, how long in all and how long at
	// worst ended late (see Lateness).
	steps, lateSteps, lateNanos, worstNanos atomic.Int64
	// plannedNanos sums the steps' modelled times and ranNanos the real
	// time they took, each from the end of the one before (or its plan,
	// after an idle engine): ran over planned is how far the engine fell
	// behind its profile's pace, tolerated lateness and all.
	plannedNanos, ranNanos atomic.Int64

	// stall, when set, runs after each step's timer fires: tests use it to
	// starve the engine as a busy machine would.
	stall func()
}

// Lateness says how far the engine fell behind its own schedule. Each step
// has a deadline, the previous step's deadline plus its modelled time; a
// step is late when it ended more than LateTolerance(step time) after it,
// which happens only when the process did not get the CPU in time (a busy
// machine, a slow reader hogging the cores). Figures measured against a
// simulator with late steps describe the starved simulator, not the profile.
type Lateness struct {
	Steps int64         // steps run
	Late  int64         // steps that ended late
	Total time.Duration // lateness summed over the late steps
	Worst time.Duration // the latest step's lateness
	// Planned is the steps' modelled time summed, Ran the real time they
	// took: 1 − Planned/Ran is the share of the time the engine lost to
	// a machine that did not give it the CPU when its schedule said.
	Planned, Ran time.Duration
}

// LateTolerance is how long after its deadline a step of time d may end
// without counting as late: 2 ms (a timer's oversleep on a loaded machine)
// or a fifth of the step, whichever is larger.
func LateTolerance(d time.Duration) time.Duration {
	return max(2*time.Millisecond, d/5)
}

// Lateness returns the engine's lateness so far.
func (e *Engine) Lateness() Lateness {
	return Lateness{
		Steps: e.steps.Load(),
		Late:  e.lateSteps.Load(),
		Total: time.Duration(e.lateNanos.Load()),
		Worst: time.Duration(e.worstNanos.Load()),

		Planned: time.Duration(e.plannedNanos.Load()),
		Ran:     time.Duration(e.ranNanos.Load()),
	}
}

// late counts a step that ended late by d against the engine and every
// request it served.
func (e *Engine) late(d time.Duration, running []*Stream) {
	e.lateSteps.Add(1)
	e.lateNanos.Add(int64(d))
	if int64(d) > e.worstNanos.Load() {
		e.worstNanos.Store(int64(d)) // only the engine goroutine writes
	}
	for _, s := range running {
		s.lateSteps.Add(1)
		if int64(d) > s.worstLate.Load() {
			s.worstLate.Store(int64(d))
		}
	}
}

// ErrStopped is returned by Submit once the engine's Run has returned.
var ErrStopped = errors.New("engine stopped")

// NewEngine makes an engine for a profile; call Run to start it.
func NewEngine(p *Profile) *Engine {
	e := &Engine{
		p:      p,
		in:     make(chan *Stream),
		cancel: make(chan *Stream),
		done:   make(chan struct{}),
		start:  time.Now(),
	}
	e.b = newBatch(p, &e.Meters)
	return e
}

// Submit queues a job and returns its stream.
func (e *Engine) Submit(j Job) (*Stream, error) {
	s := &Stream{job: j, notify: make(chan struct{}, 1), queued: time.Now()}
	select {
	case e.in <- s:
		return s, nil
	case <-e.done:
		return nil, ErrStopped
	}
}

// Cancel removes a request at once, freeing its slot and KV space.
func (e *Engine) Cancel(s *Stream) {
	select {
	case e.cancel <- s:
	case <-e.done:
	}
}

// Run is the scheduler loop; it returns when ctx is done.
func (e *Engine) Run(ctx context.Context) {
	defer close(e.done)
	b := e.b
	// Steps end on a schedule of their own: a step that ended late (timers
	// oversleep by a fraction of a millisecond) shortens the next, so the
	// engine keeps its modelled pace in real time. Catch-up is bounded.
	var planned, ended time.Time // ended: the last step's end while busy
	const maxCatchUp = 5 * time.Millisecond
	for {
		now := time.Now()
		b.admit(now, e.p.Degrade.kvTokens(e.p.KVTokens, now.Sub(e.start)))
		if len(b.running) == 0 {
			planned, ended = time.Time{}, time.Time{}
			select {
			case s := <-e.in:
				b.queue(s)
			case s := <-e.cancel:
				b.drop(s)
			case <-ctx.Done():
				return
			}
			continue
		}
		dur := b.plan()
		if d := e.p.Degrade; d != nil {
			elapsed := time.Since(e.start)
			dur = time.Duration(float64(dur)*d.stepFactor(elapsed)) + d.stallLeft(elapsed)
		}
		base := time.Now()
		from := base
		if !ended.IsZero() {
			from = ended
		}
		if floor := base.Add(-maxCatchUp); planned.After(floor) {
			base = planned
		}
		planned = base.Add(dur)
		timer := time.NewTimer(time.Until(planned))
	wait:
		for {
			select {
			case <-timer.C:
				break wait
			case s := <-e.in:
				b.queue(s)
			case s := <-e.cancel:
				b.drop(s)
			case <-ctx.Done():
				timer.Stop()
				return
			}
		}
		if e.stall != nil {
			e.stall()
		}
		now = time.Now()
		e.steps.Add(1)
		e.plannedNanos.Add(int64(dur))
		e.ranNanos.Add(int64(now.Sub(from)))
		ended = now
		if behind := now.Sub(planned); behind > LateTolerance(dur) {
			e.late(behind, b.running)
		}
		b.step(now, dur)
	}
}
