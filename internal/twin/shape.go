package twin

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/sim"
)

// A prediction past the largest fitted batch rests on how the decode step
// time goes on growing with the batch, which no measured level shows. The
// twin does not pick one growth: it replays each plausible one and the
// interval is their envelope (docs/METRICS.md §10).

// growth is one plausible growth of the step time past the largest fitted
// batch: extend gives the fitted table with that growth's points beyond
// its last batch, up to batch upTo.
type growth struct {
	key    string // straight, power, knee
	name   string
	extend func(table []sim.StepPoint, upTo int) []sim.StepPoint
}

// shape is what the fitted steps say of the curve past the last one.
type shape struct {
	growths []growth
	model   analyze.TwinShape
}

// curvatureZ is how many standard errors apart the last two slopes must
// be for the fit to have measured a curvature (95%, two-sided).
const curvatureZ = 1.96

// readShape reads the fitted step table: its last segment's slope, the
// curvature over its last three batches (measured, or within the steps'
// errors), and the growths a prediction past it spans.
func (t *Fitted) readShape() shape {
	table := t.f.profile(t.v).Decode.Table
	n := len(table)
	last := table[n-1]
	slope := 0.0
	if n >= 2 {
		slope = (last.StepMs - table[n-2].StepMs) / float64(last.Batch-table[n-2].Batch)
	}
	s := shape{model: analyze.TwinShape{FromBatch: last.Batch, FromConcurrency: t.maxC}}
	s.growths = append(s.growths, growth{key: "straight", name: fmt.Sprintf("the table extended straight (%.3g ms a batch slot)", slope), extend: nil})
	var why string
	switch {
	case n < 3:
		why = fmt.Sprintf("not pinned: %s measured, fewer than the 3 a curve needs", record.Plural(n, "batch size"))
	default:
		a, b, c := table[n-3], table[n-2], table[n-1]
		s1 := (b.StepMs - a.StepMs) / float64(b.Batch-a.Batch)
		s2 := (c.StepMs - b.StepMs) / float64(c.Batch-b.Batch)
		se := t.curvatureSE(n)
		if math.Abs(s2-s1) > curvatureZ*se {
			s.model.Pinned = true
			dir := "up"
			if s2 < s1 {
				dir = "down"
			}
			why = fmt.Sprintf("bending %s (slopes %.3g then %.3g ms a batch slot between batches %d, %d and %d)", dir, s1, s2, a.Batch, b.Batch, c.Batch)
		} else {
			why = fmt.Sprintf("not pinned: the slopes between batches %d, %d and %d (%.3g and %.3g ms a batch slot) differ by less than their error, so no curvature was measured", a.Batch, b.Batch, c.Batch, s1, s2)
		}
		if base, k, p, ok := powerThrough(a, b, c); ok {
			s.growths = append(s.growths, growth{key: "power", name: fmt.Sprintf("a power law through the last three steps (exponent %.2f)", p), extend: func(tb []sim.StepPoint, upTo int) []sim.StepPoint {
				return extendBy(tb, upTo, func(x float64) float64 { return base + k*math.Pow(x, p) })
			}})
		}
	}
	knee := last.StepMs / float64(last.Batch)
	s.growths = append(s.growths, growth{key: "knee", name: fmt.Sprintf("a compute-bound knee at batch %d (the step in proportion to the batch: throughput flat past it)", last.Batch), extend: func(tb []sim.StepPoint, upTo int) []sim.StepPoint {
		// The steeper of the straight line and the proportional one: a
		// measured slope already steeper than proportional goes on.
		x := 2 * last.Batch
		return append(slices.Clip(tb), sim.StepPoint{Batch: x, StepMs: last.StepMs + float64(last.Batch)*max(slope, knee)})
	}})
	var names []string
	for _, g := range s.growths {
		s.model.Growths = append(s.model.Growths, g.key)
		names = append(names, g.name)
	}
	s.model.Text = fmt.Sprintf("past batch %d (C=%d) the step time's growth is %s; a prediction past C=%d is the envelope of %s, each with the fit's interval, and its estimate is the first", last.Batch, t.maxC, why, t.maxC, strings.Join(names, ", "))
	return s
}

// curvatureSE is the standard error of the difference of the last two
// slopes of the step table (n points), from the covariance of the log
// step times.
func (t *Fitted) curvatureSE(n int) float64 {
	if t.cov == nil {
		return math.Inf(1)
	}
	table := t.f.profile(t.v).Decode.Table
	a, b, c := table[n-3], table[n-2], table[n-1]
	d1, d2 := float64(b.Batch-a.Batch), float64(c.Batch-b.Batch)
	// s2 − s1 = t_c/d2 − t_b (1/d2 + 1/d1) + t_a/d1, and dt/dlog t = t.
	coef := []float64{a.StepMs / d1, -b.StepMs * (1/d2 + 1/d1), c.StepMs / d2}
	v := 0.0
	for i := range 3 {
		for j := range 3 {
			v += coef[i] * t.cov[n-3+i][n-3+j] * coef[j]
		}
	}
	if !(v >= 0) {
		return math.Inf(1)
	}
	return math.Sqrt(v)
}

// powerThrough is the curve base + k·B^p through three rising steps (p in
// 0.05 … 4, found by bisection: the ratio of the two rises grows with p).
func powerThrough(a, b, c sim.StepPoint) (base, k, p float64, ok bool) {
	if !(b.StepMs > a.StepMs && c.StepMs > b.StepMs) {
		return 0, 0, 0, false
	}
	x1, x2, x3 := float64(a.Batch), float64(b.Batch), float64(c.Batch)
	ratio := func(p float64) float64 {
		return (math.Pow(x3, p) - math.Pow(x2, p)) / (math.Pow(x2, p) - math.Pow(x1, p))
	}
	want := (c.StepMs - b.StepMs) / (b.StepMs - a.StepMs)
	lo, hi := 0.05, 4.0
	switch {
	case want <= ratio(lo):
		p = lo
	case want >= ratio(hi):
		p = hi
	default:
		for range 60 {
			mid := (lo + hi) / 2
			if ratio(mid) < want {
				lo = mid
			} else {
				hi = mid
			}
		}
		p = (lo + hi) / 2
	}
	k = (b.StepMs - a.StepMs) / (math.Pow(x2, p) - math.Pow(x1, p))
	base = a.StepMs - k*math.Pow(x1, p)
	return base, k, p, true
}

// extendBy appends points of the curve f past the table's last batch, a
// quarter-octave apart, up to batch upTo: the simulator interpolates
// between them and goes on along the last segment.
func extendBy(tb []sim.StepPoint, upTo int, f func(x float64) float64) []sim.StepPoint {
	out := append([]sim.StepPoint(nil), tb...)
	last := tb[len(tb)-1].Batch
	for x := float64(last); int(math.Round(x)) < max(upTo, 2*last); {
		x *= math.Pow(2, 0.25)
		b := int(math.Round(x))
		if b <= out[len(out)-1].Batch {
			continue
		}
		out = append(out, sim.StepPoint{Batch: b, StepMs: f(float64(b))})
	}
	return out
}
