package sim

import (
	"slices"
	"time"
)

// Phase is one closed-loop phase of a simulated load: Concurrency
// requests in flight, each slot sending the next job as its request ends,
// until every job has started or Limit has passed since the phase began
// (0: no limit), whichever comes first. A phase ends when its last
// request does; the next starts then, as the client's stages do.
type Phase struct {
	Concurrency int
	Jobs        []Job
	Limit       time.Duration
	// Chat makes every request pay the chat route's costs (Chat).
	Chat bool
	// Chunks keeps every chunk of every outcome (Outcome.All); without
	// it an outcome keeps its first and last.
	Chunks bool
	// More, when set, makes the jobs after Jobs, one at a time as slots
	// free (job n, from 0 past Jobs), until it says there are none: a phase
	// bounded by Limit alone need not know its size.
	More func(n int) (Job, bool)
}

// Outcome is what a client sees of one simulated request, in times since
// the load began (a client with no latency of its own).
type Outcome struct {
	Job      int // its index in the phase's Jobs
	Sent     time.Duration
	Admitted time.Duration
	// First and Last are its first and last chunk, Tokens and Chunks its
	// tokens and chunks in all; All every chunk, with Phase.Chunks.
	First, Last    Delivery
	Tokens, Chunks int
	All            []Delivery
	Done           time.Duration
	Cached         int
	PromptTokens   int
	Finish         string // "length" or "stop"
}

// Delivery is one chunk as the client receives it.
type Delivery struct {
	At     time.Duration
	Tokens int
}

// Simulate runs phases through the profile's scheduler in virtual time,
// the same batch a served Engine runs, without a network or a clock: a
// sweep of thousands of requests takes milliseconds. It is the digital
// twin's engine (tokperf fit and predict). Faults, degradation and the
// wire are not modelled; jitter and speculative acceptance draw from the
// profile's seed as the served engine does.
func Simulate(p *Profile, phases ...Phase) [][]Outcome {
	b := newBatch(p, nil) // no /metrics to serve
	base := virtualBase
	now := time.Duration(0)
	out := make([][]Outcome, len(phases))
	for i, ph := range phases {
		out[i] = simulate(b, p, ph, base, &now)
	}
	return out
}

// inflight is a simulated request between its send and its last chunk.
type inflight struct {
	o      *Outcome
	s      *Stream
	arrive time.Duration // when it reaches the scheduler, after the overhead
	due    time.Duration // the chat route's framing queue
}

// sim is one phase's simulation: the requests not yet at the scheduler,
// in order of sending, and those whose last chunk the step just made.
type sim struct {
	b        *batch
	p        *Profile
	ph       Phase
	base     time.Time
	outs     []*Outcome
	start    time.Duration
	overhead time.Duration
	pending  []*inflight
	done     []time.Duration // when each request that ended this step ended
	inFlight int
}

func simulate(b *batch, p *Profile, ph Phase, base time.Time, now *time.Duration) []Outcome {
	s := &sim{b: b, p: p, ph: ph, base: base, start: *now, overhead: ms(p.RequestOverheadMs)}
	if ph.Chat {
		s.overhead += ms(p.Chat.PerRequestMs)
	}
	for range max(ph.Concurrency, 1) {
		s.send(s.start)
	}
	for s.inFlight > 0 {
		b.admit(base.Add(*now), p.KVTokens)
		if len(b.running) == 0 {
			// An idle engine takes the first request to arrive and starts
			// a step with it alone; the rest arrive during that step.
			if len(s.pending) == 0 {
				break // nothing left can run: a job larger than the pool
			}
			k := 0
			for i, f := range s.pending {
				if f.arrive < s.pending[k].arrive {
					k = i
				}
			}
			first := s.pending[k]
			s.pending = slices.Delete(s.pending, k, k+1)
			*now = max(*now, first.arrive)
			s.queue(first)
			b.admit(base.Add(*now), p.KVTokens)
		}
		dur := b.plan()
		*now += dur
		s.done = s.done[:0]
		b.step(base.Add(*now), dur)
		for _, at := range s.done {
			s.inFlight--
			s.send(at) // the slot's next request
		}
		// What arrived during the step joins the queue, in order: a request
		// sent as the step ended reaches the engine after the next began.
		kept := s.pending[:0]
		for _, f := range s.pending {
			if f.arrive < *now {
				s.queue(f)
			} else {
				kept = append(kept, f)
			}
		}
		s.pending = kept
	}
	out := make([]Outcome, len(s.outs))
	for i, o := range s.outs {
		out[i] = *o
	}
	return out
}

// send starts the phase's next request at at, if it has one left and its
// time limit has not passed.
func (s *sim) send(at time.Duration) {
	n := len(s.outs)
	if s.ph.Limit > 0 && at-s.start >= s.ph.Limit {
		return
	}
	var job Job
	switch {
	case n < len(s.ph.Jobs):
		job = s.ph.Jobs[n]
	case s.ph.More != nil:
		var ok bool
		if job, ok = s.ph.More(n - len(s.ph.Jobs)); !ok {
			return
		}
	default:
		return
	}
	o := &Outcome{Job: n, Sent: at, PromptTokens: job.PromptTokens}
	s.outs = append(s.outs, o)
	f := &inflight{o: o, s: &Stream{job: job}, arrive: at + s.overhead}
	f.s.sink = func(ev Event) { s.deliver(f, ev) }
	s.pending = append(s.pending, f)
	s.inFlight++
}

// queue hands a request to the scheduler.
func (s *sim) queue(f *inflight) {
	f.s.queued = s.base.Add(f.arrive)
	s.b.queue(f.s)
}

// deliver is one event as the client receives it, after the chat route's
// framing where it pays it.
func (s *sim) deliver(f *inflight, ev Event) {
	at := ev.At.Sub(s.base)
	if s.ph.Chat && s.p.Chat.PerChunkMs > 0 {
		f.due = max(f.due, at) + ms(s.p.Chat.PerChunkMs)
		at = f.due
	}
	d := Delivery{At: at, Tokens: ev.Tokens}
	o := f.o
	if o.Chunks == 0 {
		o.Admitted, o.Cached, o.First = f.s.admitted.Sub(s.base), ev.Cached, d
	}
	o.Last = d
	o.Chunks++
	o.Tokens += ev.Tokens
	if s.ph.Chunks {
		o.All = append(o.All, d)
	}
	if ev.Done {
		o.Done, o.Finish = at, ev.Finish
		s.done = append(s.done, at)
	}
}
