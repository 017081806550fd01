package sim

import (
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
	var m Meters
	b := newBatch(p, &m)
	base := time.Unix(1<<30, 0)
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
	queued bool
}

func simulate(b *batch, p *Profile, ph Phase, base time.Time, now *time.Duration) []Outcome {
	// outs never grows past its capacity, so pointers into it hold.
	outs := make([]Outcome, 0, len(ph.Jobs))
	start := *now
	overhead := ms(p.RequestOverheadMs)
	if ph.Chat {
		overhead += ms(p.Chat.PerRequestMs)
	}
	var live []*inflight
	send := func(at time.Duration) {
		n := len(outs)
		if n >= len(ph.Jobs) || (ph.Limit > 0 && at-start >= ph.Limit) {
			return
		}
		outs = append(outs, Outcome{Job: n, Sent: at})
		s := &Stream{job: ph.Jobs[n], notify: make(chan struct{}, 1)}
		live = append(live, &inflight{o: &outs[n], s: s, arrive: at + overhead})
	}
	for range max(ph.Concurrency, 1) {
		send(start)
	}
	var evs []Event
	for len(live) > 0 {
		b.admit(base.Add(*now), p.KVTokens)
		if len(b.running) == 0 {
			// An idle engine takes the first request to arrive and starts
			// a step with it alone; the rest arrive during that step.
			f := firstArrival(live)
			if f == nil {
				break // nothing left can run: a job larger than the pool
			}
			*now = max(*now, f.arrive)
			f.queue(b, base)
			b.admit(base.Add(*now), p.KVTokens)
		}
		dur := b.plan()
		*now += dur
		b.step(base.Add(*now), dur)
		kept := live[:0]
		var freed []time.Duration
		for _, f := range live {
			if f.take(p, ph, base, &evs) {
				freed = append(freed, f.o.Done)
			} else {
				kept = append(kept, f)
			}
		}
		live = kept
		for _, at := range freed {
			send(at) // the slot's next request
		}
		// What arrived during the step joins the queue, in order: a request
		// sent as the step ended reaches the engine after the next began.
		for _, f := range live {
			if !f.queued && f.arrive < *now {
				f.queue(b, base)
			}
		}
	}
	return outs
}

// firstArrival is the request not yet queued that arrives first.
func firstArrival(live []*inflight) *inflight {
	var first *inflight
	for _, f := range live {
		if !f.queued && (first == nil || f.arrive < first.arrive) {
			first = f
		}
	}
	return first
}

func (f *inflight) queue(b *batch, base time.Time) {
	f.queued = true
	f.s.queued = base.Add(f.arrive)
	b.queue(f.s)
}

// take delivers the request's new events and reports whether it ended.
func (f *inflight) take(p *Profile, ph Phase, base time.Time, evs *[]Event) bool {
	*evs = f.s.Take((*evs)[:0])
	done := false
	for _, ev := range *evs {
		at := ev.At.Sub(base)
		if ph.Chat && p.Chat.PerChunkMs > 0 {
			f.due = max(f.due, at) + ms(p.Chat.PerChunkMs)
			at = f.due
		}
		d := Delivery{At: at, Tokens: ev.Tokens}
		if f.o.Chunks == 0 {
			f.o.Admitted, f.o.Cached, f.o.First = f.s.admitted.Sub(base), ev.Cached, d
		}
		f.o.Last = d
		f.o.Chunks++
		f.o.Tokens += ev.Tokens
		if ph.Chunks {
			f.o.All = append(f.o.All, d)
		}
		if ev.Done {
			f.o.Done, f.o.Finish, done = at, ev.Finish, true
		}
	}
	return done
}
