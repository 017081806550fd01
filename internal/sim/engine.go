package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
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
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Engine is the continuous-batching scheduler: a loop of steps over the
// running set, admitting waiting requests while slots and KV space allow.
type Engine struct {
	p      *Profile
	in     chan *Stream
	cancel chan *Stream
	done   chan struct{}
	rng    *rand.Rand // engine goroutine only
	start  time.Time  // the server's start: degradation is timed from it

	// Gauges and counters for /metrics.
	Running, Waiting, KVUsed        atomic.Int64
	PromptTotal, GenTotal, Finished atomic.Int64
	SpecDrafts, SpecDraftTokens     atomic.Int64
	SpecAccepted                    atomic.Int64
	lastStepTokens, lastStepNanos   atomic.Int64

	// Steps run, and how many of them, how long in all and how long at
	// worst ended late (see Lateness).
	steps, lateSteps, lateNanos, worstNanos atomic.Int64

	// Prompt tokens looked up in the prefix cache, and found there.
	CacheQueries, CacheHits atomic.Int64
	cache                   *prefixCache // engine goroutine only; nil without one

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
		rng:    rand.New(rand.NewPCG(uint64(p.Seed), 0x5eed)),
		start:  time.Now(),
	}
	if p.PrefixCache {
		e.cache = newPrefixCache(p.PrefixCacheBlock, p.PrefixCacheTokens)
	}
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
	var waiting, running []*Stream
	kvUsed := 0
	q := e.p.verifyWidth()

	publish := func() {
		e.Running.Store(int64(len(running)))
		e.Waiting.Store(int64(len(waiting)))
		e.KVUsed.Store(int64(kvUsed))
	}
	drop := func(s *Stream) {
		if s.gone {
			return
		}
		s.gone = true
		e.leave(s)
		if i := slices.Index(waiting, s); i >= 0 {
			waiting = slices.Delete(waiting, i, i+1)
		} else if i := slices.Index(running, s); i >= 0 {
			running = slices.Delete(running, i, i+1)
			kvUsed -= s.kv
		}
		publish()
	}

	type chunk struct {
		s *Stream
		n int
	}
	var plan []chunk
	var decoders []*Stream
	// Steps end on a schedule of their own: a step that ended late (timers
	// oversleep by a fraction of a millisecond) shortens the next, so the
	// engine keeps its modelled pace in real time. Catch-up is bounded.
	var planned time.Time
	const maxCatchUp = 5 * time.Millisecond
	for {
		now := time.Now()
		pool := e.p.Degrade.kvTokens(e.p.KVTokens, now.Sub(e.start))
		for len(waiting) > 0 && len(running) < e.p.MaxRunning {
			s := waiting[0]
			need := s.job.PromptTokens + s.job.MaxTokens
			if e.cache != nil {
				// Cached blocks live in free KV: a request that needs the
				// space evicts them (a running request keeps its own KV,
				// shared prefix or not: a simplification).
				e.cache.fit(pool - kvUsed - need)
			}
			if kvUsed+need > pool && len(running) > 0 {
				break // waits for space; TTFT grows
			}
			waiting = waiting[1:]
			if e.cache != nil && s.prefilled == 0 {
				s.cached = e.cache.lookup(s.job.Blocks, s.job.PromptTokens)
				s.prefilled = s.cached // cached tokens skip prefill
				e.CacheQueries.Add(int64(s.job.PromptTokens))
				e.CacheHits.Add(int64(s.cached))
			}
			s.admitted, s.kv = now, need
			kvUsed += need
			running = append(running, s)
		}
		publish()
		if len(running) == 0 {
			planned = time.Time{}
			select {
			case s := <-e.in:
				waiting = append(waiting, s)
			case s := <-e.cancel:
				drop(s)
			case <-ctx.Done():
				return
			}
			continue
		}

		// Plan the step: every decoding request, then prefill chunks up to the budget.
		decoders, plan = decoders[:0], plan[:0]
		context := 0
		for _, s := range running {
			context += s.prefilled + s.generated
			if s.prefilled >= s.job.PromptTokens {
				decoders = append(decoders, s)
			}
		}
		budget := e.p.ChunkedPrefill - len(decoders)*q
		prefill := 0
		for _, s := range running {
			if rem := s.job.PromptTokens - s.prefilled; rem > 0 && budget > 0 {
				n := min(rem, budget)
				plan = append(plan, chunk{s, n})
				budget -= n
				prefill += n
			}
		}
		dur := e.p.StepTime(len(decoders), q, context) + e.p.PrefillTime(prefill)
		if e.p.Jitter > 0 {
			f := 1 + e.p.Jitter*e.rng.NormFloat64()
			dur = time.Duration(float64(dur) * min(max(f, 0.5), 1.5))
		}
		if d := e.p.Degrade; d != nil {
			elapsed := time.Since(e.start)
			dur = time.Duration(float64(dur)*d.stepFactor(elapsed)) + d.stallLeft(elapsed)
		}

		base := time.Now()
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
				waiting = append(waiting, s)
			case s := <-e.cancel:
				drop(s)
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
		if behind := now.Sub(planned); behind > LateTolerance(dur) {
			e.late(behind, running)
		}
		e.lastStepNanos.Store(int64(dur))
		stepTokens := 0

		for _, c := range plan {
			s := c.s
			if s.gone {
				continue
			}
			s.prefilled += c.n
			if !e.p.Wire.MetricsAtEnd {
				e.PromptTotal.Add(int64(c.n))
			}
			if s.prefilled >= s.job.PromptTokens {
				if e.cache != nil {
					e.cache.insert(s.job.Blocks, e.p.KVTokens-kvUsed)
				}
				// The last prefill chunk samples the first token.
				stepTokens += e.advance(s, 1, now)
			}
		}
		for _, s := range decoders {
			if s.gone {
				continue
			}
			n := 1
			if sp := e.p.Spec; sp != nil {
				acc, alpha := 0, sp.Acceptance
				if s.job.Accept {
					alpha = s.job.Acceptance
				}
				for acc < sp.Drafts && e.rng.Float64() < alpha {
					acc++
				}
				n += acc
				e.SpecDrafts.Add(1)
				e.SpecDraftTokens.Add(int64(sp.Drafts))
				e.SpecAccepted.Add(int64(acc))
			}
			stepTokens += e.advance(s, n, now)
		}
		e.lastStepTokens.Store(int64(stepTokens))
		running = slices.DeleteFunc(running, func(s *Stream) bool {
			if s.gone {
				kvUsed -= s.kv
				return true
			}
			return false
		})
	}
}

// leave counts a request's tokens when it leaves the engine, finished or
// cancelled, if the counters move only then (Wire.MetricsAtEnd).
func (e *Engine) leave(s *Stream) {
	if e.p.Wire.MetricsAtEnd {
		e.PromptTotal.Add(int64(s.prefilled - s.cached))
		e.GenTotal.Add(int64(s.generated))
	}
}

// advance adds up to n tokens to s, emits a chunk when the stream interval
// is reached or the output ends, and marks a finished stream gone. It
// returns the tokens added.
func (e *Engine) advance(s *Stream, n int, now time.Time) int {
	target := min(s.job.Length, s.job.MaxTokens)
	n = min(n, target-s.generated)
	s.generated += n
	s.pending += n
	s.sinceEmit++
	s.steps++
	if !e.p.Wire.MetricsAtEnd {
		e.GenTotal.Add(int64(n))
	}
	finished := s.generated >= target
	first := s.generated == n && n > 0
	if finished || first || s.sinceEmit >= e.p.StreamInterval {
		ev := Event{At: now, Tokens: s.pending, Total: s.generated, VerifySteps: s.steps, Cached: s.cached}
		if finished {
			ev.Done = true
			ev.Finish = "stop"
			if s.job.Length >= s.job.MaxTokens {
				ev.Finish = "length"
			}
			s.gone = true
			e.Finished.Add(1)
			e.leave(s)
		}
		s.push(ev)
		s.pending, s.sinceEmit = 0, 0
	}
	return n
}
