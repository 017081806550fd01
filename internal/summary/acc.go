package summary

import (
	"encoding/binary"
	"maps"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
)

// Acc builds one stage's figures from its records as they finish, so a run
// never holds its Records: per request it keeps the handful of numbers the
// distributions need, and per chunk its arrival delta-encoded (about four
// bytes for a chunk of one token). A stage of a million 16-token requests
// keeps about 130 MB. Acc is not safe for concurrent use.
//
//	a := summary.NewAcc(32, record.SLO{})
//	for each finished rec { a.Add(&rec) }
//	s := a.Stage()
type Acc struct {
	target int
	slo    record.SLO
	late   time.Duration // an open-loop send later than this is late
	s      Stage

	first, last time.Duration
	busy        time.Duration
	chunks      int
	buffered    int
	coalesced   int

	// Per-request samples, in milliseconds or tok/s.
	queue, wait, ttft, ttfo, e2e, tpot, decode, reqTokS []float64
	srvDecode, srvE2E                                   []float64
	split                                               splitAcc
	// sent and done of every measured request, for the steady state.
	sent, done []time.Duration
	// turns gathers a conversation's requests by turn (index turn-1).
	turns []turnAcc
	// sessions gathers agent sessions, when tracked (TrackSessions).
	sessions *sessionsAcc

	// blocks hold every measured request's chunks: a header
	// uvarint(chunks<<1 | ok), then per chunk zigzag(Δat)<<1 | (tokens≠1)
	// as a uvarint, followed by uvarint(tokens) when that bit is set. Δat
	// is from the previous chunk, or from 0 for the first.
	blocks  [][]byte
	stored  int    // bytes in blocks
	scratch []byte // one request's encoding
	ones    bool   // every chunk of an ok request carried one token
	// dists are the distributions Stage computed, until the next Add.
	dists *distributions
}

// NewAcc starts a stage whose target concurrency is target (0 for an
// uncapped open loop) with goodput measured against slo.
func NewAcc(target int, slo record.SLO) *Acc {
	return &Acc{
		target: target, slo: slo, late: LateThreshold, first: math.MaxInt64, last: math.MinInt64, ones: true,
		s: Stage{Concurrency: target, Errors: map[record.Status]int{}, OutputSources: map[record.TokenSource]int{}, ChunkSources: map[record.TokenSource]int{}},
	}
}

// TimerLate sets how late this machine's timers wake (their p99): an
// open-loop send counts as late only past that and LateThreshold. Set it
// before the first Add.
func (a *Acc) TimerLate(d time.Duration) { a.late = LateThreshold + max(d, 0) }

// Grow makes room for n more requests, so a stage of known size never
// copies its samples to grow them (a moment of twice the memory).
func (a *Acc) Grow(n int) {
	for _, xs := range []*[]float64{&a.queue, &a.wait, &a.ttft, &a.ttfo, &a.e2e, &a.tpot, &a.decode, &a.reqTokS} {
		*xs = slices.Grow(*xs, n)
	}
	a.sent, a.done = slices.Grow(a.sent, n), slices.Grow(a.done, n)
}

// Add takes one finished record; warm-up records are ignored.
func (a *Acc) Add(r *record.Record) {
	if r.Warmup {
		return
	}
	a.dists = nil
	s := &a.s
	s.Index, s.Rate, s.Repeat = r.Stage, r.Rate, r.Repeat
	s.Requests++
	s.Retries += r.Retries
	if r.RetryAfter > 0 {
		s.RetryAfter++
	}
	s.BackoffS += r.Backoff.Seconds()
	if r.NoKeepAlive {
		s.NoKeepAlive++
	}
	a.first, a.last = min(a.first, r.Sent), max(a.last, r.Done)
	a.busy += r.Done - r.Sent
	a.sent, a.done = append(a.sent, r.Sent), append(a.done, r.Done)
	q := r.ClientQueue()
	a.queue = append(a.queue, record.Ms(q))
	a.wait = append(a.wait, record.Ms(max(q-r.Connect, 0)))
	if r.Rate > 0 && q > a.late {
		s.Late++
	}
	a.encode(r, r.Status == record.StatusOK)
	a.session(r)
	switch r.Status {
	case record.StatusOK:
	case record.StatusCancelled:
		s.Cancelled++
		return
	default:
		s.Errors[r.Status]++
		if r.HTTPCode/100 != 2 && r.HTTPCode != 0 {
			if s.HTTPCodes == nil {
				s.HTTPCodes = map[int]int{}
			}
			s.HTTPCodes[r.HTTPCode]++
		}
		if _, seen := s.FirstError[r.Status]; !seen && r.Error != "" {
			if s.FirstError == nil {
				s.FirstError = map[record.Status]string{}
			}
			s.FirstError[r.Status] = shorten(r.Error, 200)
		}
		return
	}
	s.OK++
	if a.slo.Met(r) {
		s.SLOMet++
		s.GoodputTokS += float64(r.OutputTokens) // divided by the wall time in Stage
	}
	s.OutputTokens += r.OutputTokens
	prompt, sent := r.Prompt()
	s.PromptTokens += prompt
	if sent {
		s.PromptSent++
	}
	s.CachedTokens += r.CachedTokens
	s.ReasoningTokens += r.ReasoningTokens
	s.outcome(r)
	switch counted := r.PromptSource == record.SourceUsage; {
	case counted && r.AskedPromptSource == record.SourceTokenizer:
		s.PromptCompared++
		s.AskedPrompt += r.AskedPromptTokens
		s.ServerPrompt += r.PromptTokens
	case !counted && r.AskedPromptSource != record.SourceTokenizer:
		s.PromptEstimated++
	}
	s.OutputSources[r.OutputSource]++
	s.ChunkSources[r.ChunkSource]++
	a.chunks += len(r.Chunks)
	a.buffered += r.Buffered
	a.coalesced += r.Coalesced
	a.server(r)
	if len(r.Chunks) == 0 {
		return
	}
	ttft, _ := r.TTFT()
	a.ttft = append(a.ttft, record.Ms(ttft))
	a.turn(r, record.Ms(ttft))
	if ttfo, ok := r.TTFO(); ok {
		a.ttfo = append(a.ttfo, record.Ms(ttfo))
	} else {
		s.NoContent++
	}
	lat, _ := r.E2E()
	a.e2e = append(a.e2e, record.Ms(lat))
	if v, ok := r.RequestTokS(); ok {
		a.reqTokS = append(a.reqTokS, v)
	}
	if tpot, ok := r.TPOT(); ok {
		d, _ := r.DecodeTokS()
		a.tpot = append(a.tpot, tpot)
		a.decode = append(a.decode, d)
	}
}

// server takes what the server reported about an ok request: its decode
// speed, E2E and the TTFT split.
func (a *Acc) server(r *record.Record) {
	t := r.Server
	if t == nil {
		return
	}
	a.s.ServerTimed++
	if t.Compute {
		a.s.ServerCompute++
	}
	if v := t.DecodeTokS(); v > 0 {
		a.srvDecode = append(a.srvDecode, v)
	}
	if t.E2EMs > 0 {
		a.srvE2E = append(a.srvE2E, t.E2EMs)
	}
	a.split.add(r)
}

// shorten cuts s to n bytes at a rune boundary, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// blockSize is the size of the blocks chunk times are stored in: a stage's
// store grows a block at a time instead of being copied into one twice as
// large (a moment of three times the memory).
const blockSize = 1 << 20

func (a *Acc) encode(r *record.Record, ok bool) {
	chunks := r.Chunks
	head := uint64(len(chunks)) << 2
	if ok {
		head |= 1
	}
	// An ok request whose server counted a different total than its
	// chunks (usage only at the end, several tokens per chunk) keeps both,
	// so token counts over time are scaled to the server's count.
	sum := r.ChunkTokens()
	scaled := ok && len(chunks) > 0 && sum > 0 && r.OutputTokens != sum
	if scaled {
		head |= 2
	}
	b := binary.AppendUvarint(a.scratch[:0], head)
	if scaled {
		b = binary.AppendUvarint(b, uint64(max(r.OutputTokens, 0)))
		b = binary.AppendUvarint(b, uint64(sum))
	}
	prev := time.Duration(0)
	for _, c := range chunks {
		d := int64(c.At - prev)
		prev = c.At
		v := uint64(d<<1^d>>63) << 1 // zigzag, then the tokens bit
		if c.Tokens != 1 {
			v |= 1
			if ok {
				a.ones = false
			}
		}
		b = binary.AppendUvarint(b, v)
		if c.Tokens != 1 {
			b = binary.AppendUvarint(b, uint64(max(c.Tokens, 0)))
		}
	}
	a.scratch = b
	// A request's chunks stay in one block.
	if n := len(a.blocks); n == 0 || len(a.blocks[n-1])+len(b) > cap(a.blocks[n-1]) {
		a.blocks = append(a.blocks, make([]byte, 0, max(blockSize, len(b))))
	}
	last := &a.blocks[len(a.blocks)-1]
	*last = append(*last, b...)
	a.stored += len(b)
}

// each calls fn for every stored chunk in the order added: whether its
// request was ok, its index in the request, its arrival, its tokens, and
// the tokens it counts for when the server's total differs from the
// chunks' (tokens × total / Σ chunk tokens; tokens otherwise).
func (a *Acc) each(fn func(ok bool, i int, at time.Duration, tokens int, counted float64)) {
	for _, b := range a.blocks {
		for len(b) > 0 {
			head, k := binary.Uvarint(b)
			b = b[k:]
			ok, n := head&1 == 1, int(head>>2)
			scale := 1.0
			if head&2 != 0 {
				total, k1 := binary.Uvarint(b)
				sum, k2 := binary.Uvarint(b[k1:])
				b = b[k1+k2:]
				scale = float64(total) / float64(sum)
			}
			at := time.Duration(0)
			for i := range n {
				v, k := binary.Uvarint(b)
				b = b[k:]
				z := v >> 1
				at += time.Duration(int64(z>>1) ^ -int64(z&1))
				tokens := 1
				if v&1 == 1 {
					t, k := binary.Uvarint(b)
					b = b[k:]
					tokens = int(t)
				}
				fn(ok, i, at, tokens, float64(tokens)*scale)
			}
		}
	}
}

// Window is the stage's measured window, first send to last end (Unset
// when nothing was measured).
func (a *Acc) Window() (from, to time.Duration) {
	if a.s.Requests == 0 {
		return record.Unset, record.Unset
	}
	return a.first, a.last
}

// TokensIn counts the tokens of every measured request, failed ones
// included, whose chunks arrived in (from, to], as the server counted them
// (scaled to its total where the chunks' counts were estimated).
func (a *Acc) TokensIn(from, to time.Duration) float64 {
	n := 0.0
	a.each(func(_ bool, _ int, at time.Duration, _ int, counted float64) {
		if at > from && at <= to {
			n += counted
		}
	})
	return n
}

// Stage computes the figures of docs/METRICS.md §2–3 from what was added.
// Samples are sorted in place; more records may be added afterwards.
func (a *Acc) Stage() Stage {
	s := a.s
	if s.Rate > 0 {
		s.LateMs = record.Ms(a.late)
	}
	s.Errors, s.OutputSources, s.ChunkSources = maps.Clone(a.s.Errors), maps.Clone(a.s.OutputSources), maps.Clone(a.s.ChunkSources)
	s.HTTPCodes, s.FirstError = maps.Clone(a.s.HTTPCodes), maps.Clone(a.s.FirstError)
	if len(s.Errors) == 0 {
		s.Errors = nil
	}
	if s.Requests > 0 {
		wall := a.last - a.first
		s.WallS = wall.Seconds()
		if wall > 0 {
			s.AggregateTokS = float64(s.OutputTokens) / s.WallS
			s.InputTokS = float64(s.PromptTokens) / s.WallS
			s.TotalTokS = float64(s.PromptTokens+s.OutputTokens) / s.WallS
			s.RequestsPerS = float64(s.OK) / s.WallS
			s.GoodputRequestsPerS = float64(s.SLOMet) / s.WallS
			s.GoodputTokS /= s.WallS
			s.EffectiveConcurrency = a.busy.Seconds() / s.WallS
		} else {
			s.GoodputTokS = 0
		}
	}
	if s.OK > 0 {
		s.MeanOutputTokens = float64(s.OutputTokens) / float64(s.OK)
	}
	if a.chunks > 0 {
		s.TokensPerChunk = float64(s.OutputTokens) / float64(a.chunks)
		s.BufferedShare = float64(a.buffered) / float64(a.chunks)
		s.CoalescedShare = float64(a.coalesced) / float64(a.chunks)
	}
	d := a.distributions()
	s.SteadyTokS, s.AggregateSpread = d.steady, d.spread
	s.ClientQueue, s.ClientWait = d.queue, d.wait
	s.TTFT, s.TTFO, s.E2E = d.ttft, d.ttfo, d.e2e
	s.TPOT, s.DecodeTokS, s.RequestTokS = d.tpot, d.decode, d.reqTokS
	s.ServerDecodeTokS, s.ServerE2E = d.srvDecode, d.srvE2E
	s.TTFTSplit = a.split.split()
	s.ICL, s.ITL = d.icl, d.itl
	s.Turns = a.turnFigures()
	s.Sessions = a.sessions.figures()
	return s
}

// distributions are a stage's steady state and distributions, the costly
// part of Stage (passes over every chunk, sorts): kept until the next
// Add, so a stage whose figures are read twice (its line when it ends,
// the run's model after) pays for them once.
type distributions struct {
	steady, spread                                      float64
	queue, wait, ttft, ttfo, e2e, tpot, decode, reqTokS stats.Dist
	srvDecode, srvE2E, icl, itl                         stats.Dist
}

func (a *Acc) distributions() *distributions {
	if a.dists != nil {
		return a.dists
	}
	d := &distributions{steady: a.steady(), spread: a.blockSpread()}
	d.queue, d.wait = stats.Describe(a.queue), stats.Describe(a.wait)
	d.ttft, d.ttfo, d.e2e = stats.Describe(a.ttft), stats.Describe(a.ttfo), stats.Describe(a.e2e)
	d.tpot, d.decode, d.reqTokS = stats.Describe(a.tpot), stats.Describe(a.decode), stats.Describe(a.reqTokS)
	d.srvDecode, d.srvE2E = stats.Describe(a.srvDecode), stats.Describe(a.srvE2E)
	d.icl, d.itl = a.gapDists()
	a.dists = d
	return d
}

// gapDists reads the chunk gaps from the stored arrivals a few times over
// instead of gathering them: a stage of 15 million gaps needs no room for
// them. When every chunk carried one token the token-weighted ITL is the
// ICL sample itself.
func (a *Acc) gapDists() (icl, itl stats.Dist) {
	gaps := func(perToken bool) stats.Each {
		return func(emit func(float64, int)) {
			var prev time.Duration
			a.each(func(ok bool, i int, at time.Duration, tokens int, _ float64) {
				if ok && i > 0 {
					if perToken {
						emit(record.Ms(at-prev)/float64(tokens), tokens)
					} else {
						emit(record.Ms(at-prev), 1)
					}
				}
				prev = at
			})
		}
	}
	icl = stats.DescribeEach(gaps(false))
	if a.ones {
		return icl, icl
	}
	return icl, stats.DescribeEach(gaps(true))
}

// spreadBlocks is how many equal time blocks a stage's window is cut into
// for the noise of its aggregate tok/s; the first and the last (the ramp
// and the drain) are left out.
const spreadBlocks = 10

// blockSpread is the relative standard error of the stage's aggregate
// tok/s from its time blocks (METRICS.md §3): the standard deviation of
// the inner blocks' token rates over their mean, over the square root of
// their count; 0 when nothing was delivered in them.
func (a *Acc) blockSpread() float64 {
	from, to := a.first, a.last
	if a.s.Requests == 0 || to <= from {
		return 0
	}
	var tok [spreadBlocks]float64
	w := int64(to - from)
	a.each(func(ok bool, _ int, at time.Duration, _ int, counted float64) {
		if ok && at > from && at <= to {
			tok[min(int(spreadBlocks*int64(at-from)/w), spreadBlocks-1)] += counted
		}
	})
	inner := tok[1 : spreadBlocks-1]
	mean := 0.0
	for _, x := range inner {
		mean += x
	}
	mean /= float64(len(inner))
	if mean <= 0 {
		return 0
	}
	v := 0.0
	for _, x := range inner {
		v += (x - mean) * (x - mean)
	}
	return math.Sqrt(v/float64(len(inner)-1)) / mean / math.Sqrt(float64(len(inner)))
}

// steady is the tokens whose chunks arrived while at least target requests
// were in flight, divided by the time that was so (METRICS.md §3); 0 when
// no time had the target in flight.
func (a *Acc) steady() float64 {
	if a.target <= 0 {
		return 0
	}
	slices.Sort(a.sent)
	slices.Sort(a.done)
	type span struct{ from, to time.Duration }
	var spans []span
	n := 0
	var open time.Duration
	step := func(at time.Duration, delta int) {
		was := n
		n += delta
		if was < a.target && n >= a.target {
			open = at
		} else if was >= a.target && n < a.target && at > open {
			spans = append(spans, span{open, at})
		}
	}
	// Merge the two sorted lists; at equal times a slot frees before it
	// is refilled.
	i, j := 0, 0
	for i < len(a.sent) || j < len(a.done) {
		if j < len(a.done) && (i == len(a.sent) || a.done[j] <= a.sent[i]) {
			step(a.done[j], -1)
			j++
		} else {
			step(a.sent[i], +1)
			i++
		}
	}
	var total time.Duration
	for _, sp := range spans {
		total += sp.to - sp.from
	}
	if total <= 0 {
		return 0
	}
	tokens := 0.0
	a.each(func(ok bool, _ int, at time.Duration, _ int, n float64) {
		if !ok {
			return
		}
		k, _ := slices.BinarySearchFunc(spans, at, func(sp span, at time.Duration) int {
			if sp.to < at {
				return -1
			}
			return 1
		})
		if k < len(spans) && spans[k].from <= at {
			tokens += n
		}
	})
	return tokens / total.Seconds()
}

// outcome counts how an ok request's answer ended: at the length or
// earlier (each API's word for the length: length, limit, max_tokens,
// max_output_tokens), and with a tool call.
func (s *Stage) outcome(r *record.Record) {
	switch r.FinishReason {
	case "":
	case "length", "limit", "max_tokens", "max_output_tokens":
		s.LengthFinished++
	default:
		s.EarlyFinished++
	}
	if len(r.ToolCalls) > 0 {
		s.ToolCalled++
		s.ToolTokens += r.ToolTokens
	}
}
