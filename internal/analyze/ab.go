package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// Req is one finished request as an A/B reads it: when it ended (s on the
// run's clock), its output tokens, latency (s), TTFT (ms) and decode
// tok/s, NaN where it has none.
type Req struct {
	Done, Tokens, Latency, TTFT, Decode float64
}

// The requests of one stage are not independent draws: at C=8 they share
// every batch step and its jitter. An A/B's unit is therefore what does
// vary independently (METRICS.md, "Error model"): a repeat, or within one
// stage a time block of consecutive requests long enough that its
// neighbours share little with it. Both sizes below were chosen by
// measurement over generated servers (TestABIdenticalServers).
var blocking = cut{rounds: 1, most: 10}

// cut is how a stage is cut into time blocks: each block holds at least
// rounds rounds of the stage's concurrency (requests of adjacent blocks
// then share at most a round of steps), and there are at most most of
// them (more, shorter blocks add degrees of freedom but share more
// steps with their neighbours).
type cut struct {
	rounds float64
	most   int
}

// minBlocks is the fewest blocks a side needs for an interval.
const minBlocks = 3

// abFigure is one figure of an A/B: its value for a stage, and for a
// block of requests.
type abFigure struct {
	name  string
	stage func(s summary.Stage) float64
	block func(b block) float64
}

var abFigures = []abFigure{
	// A block's aggregate is the tokens of the requests that ended in it
	// over its span, from the previous block's last end to its own: a
	// steady-state throughput, whatever the loop (blocks carry the span's
	// start in span). Another tool's lists have no times: their blocks
	// read the Little's-law estimate Σ tokens / Σ latency, which is
	// proportional to throughput at the same concurrency.
	{"aggregate tok/s", func(s summary.Stage) float64 { return s.AggregateTokS }, blockTokS},
	{"decode tok/s p50", func(s summary.Stage) float64 { return s.DecodeTokS.P50 }, func(b block) float64 {
		return medianOf(b.reqs, func(r Req) float64 { return r.Decode })
	}},
	{"TTFT p50 ms", func(s summary.Stage) float64 { return s.TTFT.P50 }, func(b block) float64 {
		return medianOf(b.reqs, func(r Req) float64 { return r.TTFT })
	}},
}

// block is a span of a stage's time, from and to on the run's clock
// (NaN where the requests have no times): the requests that ended in it,
// and all of the stage's, whose tokens it shares.
type block struct {
	from, to float64
	reqs     []Req
	all      []Req
}

// blockTokS is the tokens delivered in a block's span over its length,
// each request's output spread evenly from its first token to its end
// (a smooth throughput where a count of the requests that ended in the
// span would jump with each); without times, the Little's-law estimate.
func blockTokS(b block) float64 {
	if math.IsNaN(b.from) {
		var tok, lat float64
		for _, r := range b.reqs {
			if !math.IsNaN(r.Latency) {
				tok, lat = tok+r.Tokens, lat+r.Latency
			}
		}
		return tok / lat
	}
	tok := 0.0
	for _, r := range b.all {
		first := r.Done - r.Latency
		if !math.IsNaN(r.TTFT) {
			first += r.TTFT / 1000
		}
		if math.IsNaN(first) || r.Done <= b.from || first >= b.to {
			continue
		}
		if r.Done <= first {
			if r.Done > b.from && r.Done <= b.to {
				tok += r.Tokens
			}
			continue
		}
		tok += r.Tokens * (min(r.Done, b.to) - max(first, b.from)) / (r.Done - first)
	}
	return tok / (b.to - b.from)
}

func medianOf(rs []Req, of func(Req) float64) float64 {
	var xs []float64
	for _, r := range rs {
		if v := of(r); !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	return stats.Describe(xs).P50
}

// reqsOf are a stage's requests in the order they ended; another tool's
// lists, which have no times, in their own order (each list its own
// field, so a figure's blocks are consecutive entries of its list).
func reqsOf(x *Samples) []Req {
	if x == nil {
		return nil
	}
	if len(x.Reqs) > 0 {
		rs := slices.Clone(x.Reqs)
		slices.SortStableFunc(rs, func(a, b Req) int { return cmp.Compare(a.Done, b.Done) })
		return rs
	}
	n := max(len(x.Pairs), len(x.Decode), len(x.TTFT))
	rs := make([]Req, n)
	for i := range rs {
		rs[i] = Req{Done: float64(i), Latency: math.NaN(), TTFT: math.NaN(), Decode: math.NaN()}
		if i < len(x.Pairs) {
			rs[i].Tokens, rs[i].Latency = x.Pairs[i][0], x.Pairs[i][1]
		}
		if i < len(x.Decode) {
			rs[i].Decode = x.Decode[i]
		}
		if i < len(x.TTFT) {
			rs[i].TTFT = x.TTFT[i]
		}
	}
	return rs
}

// blocks cuts a stage into time blocks: the first round of its
// concurrency, then the last, are left out where enough remain (the closed loop's ramp-up
// sends every slot at once, its drain ends in a shrinking batch), and the
// span between is cut into equal spans as cut says, each holding the
// requests that ended in it. Another tool's lists, without times, are cut
// into runs of consecutive entries. Nil when fewer than minBlocks fit.
func (cu cut) blocks(s *Stage) []block {
	rs := reqsOf(s.samples)
	c := max(s.Concurrency, int(math.Ceil(s.EffectiveConcurrency)), 1)
	lo, hi := 0, len(rs)
	per := max(1, int(math.Ceil(cu.rounds*float64(c)))) // requests a block at least
	if len(rs) >= c+minBlocks*per {
		lo = c // the ramp-up first: every slot's first prefill at once
	}
	if hi-lo >= c+minBlocks*per {
		hi -= c
	}
	k := min(cu.most, (hi-lo)/per)
	if k < minBlocks {
		return nil
	}
	out := make([]block, k)
	if !timed(s) {
		for i := range out {
			part := rs[lo+i*(hi-lo)/k : lo+(i+1)*(hi-lo)/k]
			out[i] = block{from: math.NaN(), to: math.NaN(), reqs: part}
		}
		return out
	}
	// The span runs from the end of the last request left out at the
	// start to the end of the last one kept.
	from, to := rs[max(lo-1, 0)].Done, rs[hi-1].Done
	if lo == 0 {
		from = rs[0].Done - rs[0].Latency
	}
	if !(to > from) {
		return nil
	}
	j := lo
	for i := range out {
		b := block{from: from + (to-from)*float64(i)/float64(k), to: from + (to-from)*float64(i+1)/float64(k), all: rs}
		start := j
		for j < hi && (rs[j].Done <= b.to || i == k-1) {
			j++
		}
		b.reqs = rs[start:j]
		out[i] = b
	}
	return out
}

// logsOf are the logarithms of a figure over groups of requests, leaving
// out groups where it is not positive.
func logsOf(f abFigure, groups []block) []float64 {
	var out []float64
	for _, g := range groups {
		if v := f.block(g); v > 0 {
			out = append(out, math.Log(v))
		}
	}
	return out
}

// timed says whether a stage's requests carry their times (tokperf's
// own, not another tool's lists).
func timed(s *Stage) bool { return s.samples != nil && len(s.samples.Reqs) > 0 }

// steady is a figure over every block: the stage without its first and
// last round; NaN without blocks.
func steady(f abFigure, bs []block) float64 {
	if len(bs) == 0 {
		return math.NaN()
	}
	all := block{from: bs[0].from, to: bs[len(bs)-1].to, all: bs[0].all}
	for _, b := range bs {
		all.reqs = append(all.reqs, b.reqs...)
	}
	return f.block(all)
}

// judge sets a metric's interval from the half width of its log ratio:
// centred on the measured ratio, significant when it leaves out 1, and
// the difference it resolves.
func (m *Metric) judge(half float64, unit string, units int) {
	m.Unit, m.Units = unit, units
	if math.IsNaN(half) || math.IsNaN(m.Ratio) || math.IsInf(m.Ratio, 0) || !(m.Ratio > 0) {
		return
	}
	m.Lo, m.Hi = m.Ratio*math.Exp(-half), m.Ratio*math.Exp(half)
	m.Resolves = math.Exp(half) - 1
	m.Significant = m.Lo > 1 || m.Hi < 1
}

// pairBlocks compares two stages by their time blocks: Welch's t on the
// logarithms of each block's figure.
func pairBlocks(a, b *Stage) []Metric { return blocking.pair(a, b) }

func (cu cut) pair(a, b *Stage) []Metric {
	ba, bb := cu.blocks(a), cu.blocks(b)
	var out []Metric
	for _, f := range abFigures {
		m := Metric{Name: f.name, A: f.stage(a.Stage), B: f.stage(b.Stage), P: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Resolves: math.NaN()}
		m.Ratio = m.B / m.A
		if sa, sb := steady(f, ba), steady(f, bb); sa > 0 && sb > 0 && timed(a) && timed(b) {
			// The ratio is the steady part's, as its interval is: the
			// ramp-up and the drain vary with the few requests that run
			// in them, a noise no block sees.
			m.Ratio = sb / sa
		}
		la, lb := logsOf(f, ba), logsOf(f, bb)
		_, half := stats.MeanDiff(la, lb)
		if len(la) < minBlocks || len(lb) < minBlocks {
			half = math.NaN()
		}
		unit := "time blocks"
		if !sampled(a) || !sampled(b) {
			unit = "" // a file of summaries: nothing to cut
		}
		m.judge(half, unit, min(len(la), len(lb)))
		out = append(out, m)
	}
	return out
}

// PairRepeats compares the repeats of one level of two runs, repeat i of
// A with repeat i of B: Student's t with n − 1 degrees of freedom on the
// logarithms of the n ratios. A and B are the figures' means over the
// repeats. With fewer than two repeats a side it is Pair of the first.
func PairRepeats(as, bs []*Stage) []Metric {
	n := min(len(as), len(bs))
	if n < 2 {
		return Pair(as[0], bs[0])
	}
	var out []Metric
	for _, f := range abFigures {
		var xa, xb, logs []float64
		for i := range n {
			va, vb := f.stage(as[i].Stage), f.stage(bs[i].Stage)
			xa, xb = append(xa, va), append(xb, vb)
			if va > 0 && vb > 0 {
				logs = append(logs, math.Log(vb/va))
			}
		}
		ma, _, _ := stats.MeanCI(xa)
		mb, _, _ := stats.MeanCI(xb)
		m := Metric{Name: f.name, A: ma, B: mb, Ratio: mb / ma, P: math.NaN(), Lo: math.NaN(), Hi: math.NaN(), Resolves: math.NaN()}
		_, half, _ := stats.MeanCI(logs)
		m.judge(half, "repeats", len(logs))
		out = append(out, m)
	}
	return out
}

// byKey groups a run's stages by key, repeats in order, keys in the
// order they first appear.
func byKey(r *Run) ([]StageKey, map[StageKey][]*Stage) {
	var keys []StageKey
	by := map[StageKey][]*Stage{}
	for i := range r.Stages {
		k := r.Stages[i].Key()
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], &r.Stages[i])
	}
	return keys, by
}

// resolution is what a stage's comparison could resolve, in words:
// "resolves ±3.1% aggregate, ±2.0% decode p50, ±5.5% TTFT p50 (8 time
// blocks a side)"; "" when no figure has an interval.
func resolution(ms []Metric) string {
	var parts []string
	unit, units := "", 0
	for _, m := range ms {
		if math.IsNaN(m.Resolves) || m.Withheld != "" {
			continue
		}
		parts = append(parts, Pct(m.Resolves)+" "+shortName(m.Name))
		unit, units = m.Unit, m.Units
	}
	if len(parts) == 0 {
		return ""
	}
	s := "resolves " + strings.Join(parts, ", ")
	if unit == "repeats" {
		return s + fmt.Sprintf(" (%d paired repeats)", units)
	}
	return s + fmt.Sprintf(" (%d %s a side)", units, unit)
}

// Resolution says what the comparison of one stage could resolve, and
// how to see less; where stages of per-request samples were too short
// for three time blocks a side, that it resolves nothing; "" for files of
// summaries, or where the difference is not judged.
func Resolution(ms []Metric) string {
	r := resolution(ms)
	if r != "" {
		return r + "; ask for more repeats (--repeat) to see less"
	}
	for _, m := range ms {
		if m.Unit == "time blocks" && m.Withheld == "" && math.IsNaN(m.Resolves) {
			return "resolves nothing: too few requests for three time blocks of a round each a side; ask for more repeats (--repeat) or more requests (--requests)"
		}
	}
	return ""
}

// sampled says whether a stage kept its per-request samples.
func sampled(s *Stage) bool {
	x := s.samples
	return x != nil && (len(x.Reqs) > 0 || len(x.Pairs) > 0 || len(x.Decode) > 0 || len(x.TTFT) > 0)
}

// Pct is a resolution in words: "±3.1%", "±<0.1%" below a tenth.
func Pct(r float64) string {
	if r < 0.0005 {
		return "±<0.1%"
	}
	return fmt.Sprintf("±%.1f%%", 100*r)
}

func shortName(name string) string {
	switch name {
	case "aggregate tok/s":
		return "aggregate"
	case "decode tok/s p50":
		return "decode p50"
	case "TTFT p50 ms":
		return "TTFT p50"
	}
	return name
}
