package sim

import (
	"math/rand/v2"
	"slices"
	"time"
)

// batch is continuous batching without a clock: the waiting queue, the
// running set, the KV pool and the rules of a step. Engine.Run drives it
// in real time; Simulate drives it in virtual time, so a digital twin
// schedules exactly as the server does.
type batch struct {
	p      *Profile
	m      *Meters // nil: none kept (Simulate)
	rng    *rand.Rand
	cache  *prefixCache // nil without one
	q      int          // tokens verified per request per step
	kvUsed int

	waiting, running []*Stream
	// The planned step: its prefill chunks and its decoding requests.
	chunks   []chunk
	decoders []*Stream
}

type chunk struct {
	s *Stream
	n int
}

func newBatch(p *Profile, m *Meters) *batch {
	b := &batch{p: p, m: m, rng: rand.New(rand.NewPCG(uint64(p.Seed), 0x5eed)), q: p.verifyWidth()}
	if p.PrefixCache {
		b.cache = newPrefixCache(p.PrefixCacheBlock, p.PrefixCacheTokens)
	}
	return b
}

// publish sets the gauges.
func (b *batch) publish() {
	if b.m != nil {
		b.m.Running.Store(int64(len(b.running)))
		b.m.Waiting.Store(int64(len(b.waiting)))
		b.m.KVUsed.Store(int64(b.kvUsed))
	}
}

// queue adds an arrived request to the waiting queue.
func (b *batch) queue(s *Stream) { b.waiting = append(b.waiting, s) }

// drop removes a cancelled request at once, freeing its slot and KV.
func (b *batch) drop(s *Stream) {
	if s.gone {
		return
	}
	s.gone = true
	b.leave(s)
	if i := slices.Index(b.waiting, s); i >= 0 {
		b.waiting = slices.Delete(b.waiting, i, i+1)
	} else if i := slices.Index(b.running, s); i >= 0 {
		b.running = slices.Delete(b.running, i, i+1)
		b.kvUsed -= s.kv
	}
	b.publish()
}

// admit moves waiting requests into the running set, first come first
// served, while a slot is free and the KV pool of pool tokens has room.
func (b *batch) admit(now time.Time, pool int) {
	for len(b.waiting) > 0 && len(b.running) < b.p.MaxRunning {
		s := b.waiting[0]
		need := s.job.PromptTokens + s.job.MaxTokens
		if b.cache != nil {
			// Cached blocks live in free KV: a request that needs the
			// space evicts them (a running request keeps its own KV,
			// shared prefix or not: a simplification).
			b.cache.fit(pool - b.kvUsed - need)
		}
		if b.kvUsed+need > pool && len(b.running) > 0 {
			break // waits for space; TTFT grows
		}
		b.waiting = b.waiting[1:]
		if b.cache != nil && s.prefilled == 0 {
			s.cached = b.cache.lookup(s.job.Blocks, s.job.PromptTokens)
			s.prefilled = s.cached // cached tokens skip prefill
			if b.m != nil {
				b.m.CacheQueries.Add(int64(s.job.PromptTokens))
				b.m.CacheHits.Add(int64(s.cached))
			}
		}
		s.admitted, s.kv = now, need
		b.kvUsed += need
		b.running = append(b.running, s)
	}
	b.publish()
}

// plan plans the next step, every decoding request and then prefill
// chunks up to the budget, and returns its modelled time (with jitter).
func (b *batch) plan() time.Duration {
	b.decoders, b.chunks = b.decoders[:0], b.chunks[:0]
	context := 0
	for _, s := range b.running {
		context += s.prefilled + s.generated
		if s.prefilled >= s.job.PromptTokens {
			b.decoders = append(b.decoders, s)
		}
	}
	budget := b.p.ChunkedPrefill - len(b.decoders)*b.q
	prefill := 0
	for _, s := range b.running {
		if rem := s.job.PromptTokens - s.prefilled; rem > 0 && budget > 0 {
			n := min(rem, budget)
			b.chunks = append(b.chunks, chunk{s, n})
			budget -= n
			prefill += n
		}
	}
	dur := b.p.StepTime(len(b.decoders), b.q, context) + b.p.PrefillTime(prefill)
	if b.p.Jitter > 0 {
		f := 1 + b.p.Jitter*b.rng.NormFloat64()
		dur = time.Duration(float64(dur) * min(max(f, 0.5), 1.5))
	}
	return dur
}

// step applies the planned step, which ended at now after dur: prefill
// progress, a token (or a speculative step's) for every decoder, chunks
// out, finished requests gone.
func (b *batch) step(now time.Time, dur time.Duration) {
	if b.m != nil {
		b.m.lastStepNanos.Store(int64(dur))
	}
	stepTokens := 0
	for _, c := range b.chunks {
		s := c.s
		if s.gone {
			continue
		}
		s.prefilled += c.n
		if !b.p.Wire.MetricsAtEnd {
			if b.m != nil {
				b.m.PromptTotal.Add(int64(c.n))
			}
		}
		if s.prefilled >= s.job.PromptTokens {
			if b.cache != nil {
				b.cache.insert(s.job.Blocks, b.p.KVTokens-b.kvUsed)
			}
			// The last prefill chunk samples the first token.
			stepTokens += b.advance(s, 1, now)
		}
	}
	for _, s := range b.decoders {
		if s.gone {
			continue
		}
		n := 1
		if sp := b.p.Spec; sp != nil {
			acc, alpha := 0, sp.Acceptance
			if s.job.Accept {
				alpha = s.job.Acceptance
			}
			for acc < sp.Drafts && b.rng.Float64() < alpha {
				acc++
			}
			n += acc
			if b.m != nil {
				b.m.SpecDrafts.Add(1)
				b.m.SpecDraftTokens.Add(int64(sp.Drafts))
				b.m.SpecAccepted.Add(int64(acc))
			}
		}
		stepTokens += b.advance(s, n, now)
	}
	if b.m != nil {
		b.m.lastStepTokens.Store(int64(stepTokens))
	}
	b.running = slices.DeleteFunc(b.running, func(s *Stream) bool {
		if s.gone {
			b.kvUsed -= s.kv
			return true
		}
		return false
	})
}

// leave counts a request's tokens when it leaves the engine, finished or
// cancelled, if the counters move only then (Wire.MetricsAtEnd).
func (b *batch) leave(s *Stream) {
	if b.p.Wire.MetricsAtEnd {
		if b.m != nil {
			b.m.PromptTotal.Add(int64(s.prefilled - s.cached))
			b.m.GenTotal.Add(int64(s.generated))
		}
	}
}

// advance adds up to n tokens to s, emits a chunk when the stream interval
// is reached or the output ends, and marks a finished stream gone. It
// returns the tokens added.
func (b *batch) advance(s *Stream, n int, now time.Time) int {
	target := min(s.job.Length, s.job.MaxTokens)
	n = min(n, target-s.generated)
	s.generated += n
	s.pending += n
	s.sinceEmit++
	s.steps++
	if !b.p.Wire.MetricsAtEnd {
		if b.m != nil {
			b.m.GenTotal.Add(int64(n))
		}
	}
	finished := s.generated >= target
	first := s.generated == n && n > 0
	if finished || first || s.sinceEmit >= b.p.StreamInterval {
		ev := Event{At: now, Tokens: s.pending, Total: s.generated, VerifySteps: s.steps, Cached: s.cached}
		if finished {
			ev.Done = true
			ev.Finish = "stop"
			if s.job.Length >= s.job.MaxTokens {
				ev.Finish = "length"
			}
			s.gone = true
			if b.cache != nil && s.job.Reply != nil {
				// Its KV, freed as it leaves, keeps the reply's blocks.
				b.cache.insert(s.job.Reply, b.p.KVTokens-b.kvUsed+s.kv)
			}
			if b.m != nil {
				b.m.Finished.Add(1)
			}
			b.leave(s)
		}
		s.push(ev)
		s.pending, s.sinceEmit = 0, 0
	}
	return n
}
