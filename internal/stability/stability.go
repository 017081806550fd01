// Package stability says whether a long run held steady: over its time
// slices, each figure's robust trend per hour with a 95% interval
// (Theil–Sen with Sen's interval), its change points (binary
// segmentation, chosen over a smooth drift, a line or a parabola, only
// when they explain the series better by a margin in the Bayesian
// information criterion), and the growth of
// the server's memory per hour. Warm-up slices and slices cut short are
// left out, and the verdict says so. It knows nothing of how the slices
// were measured.
//
//	v := stability.Judge(stability.Input{Slice: time.Minute, At: starts, Series: series})
//	fmt.Println(v.Text) // "stable: aggregate −0.3% over 2h [−0.9%, +0.4%], …"
package stability

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Thresholds. A figure is called drifting only when its trend's 99%
// interval excludes zero and the line moves it by DriftMin or more over the
// measured span; shifted only when a change point the data choose moves
// its level by ShiftMin or more; memory grows only when its interval
// excludes zero and it grows by MemoryMin of its level over the span.
// They are calibrated so that fewer than 5% of steady runs are called
// anything but stable (TestSteadyRunsAreStable).
const (
	DriftMin  = 0.05
	ShiftMin  = 0.05
	MemoryMin = 0.01
	// StableWithin is how far the aggregate's trend interval may reach
	// over the run, as a share of its level, for the run to be called
	// stable: further, the run cannot tell a steady server from one
	// drifting by three times DriftMin, and is too short to judge.
	StableWithin = 0.15
	// MinSlices is the fewest measured slices a verdict needs.
	MinSlices = 6
)

// SegmentPenalty·ln(n)·σ² is how much a split must lower a segment's
// squared error to be a change point.
const SegmentPenalty = 5.0

// StepMargin·ln(n) is how much lower the steps' BIC must be than the best
// smooth curve's (a line or a parabola) for change points to be kept.
const StepMargin = 2.0

// DecideZ is the normal quantile of the interval a trend must exclude
// zero by to count (99%), Bonferroni over the handful of figures judged.
const DecideZ = 2.575829

// Unit of a series: its values' unit, which also says how it is judged.
type Unit string

const (
	TokS  Unit = "tok/s" // higher is better
	Ms    Unit = "ms"    // lower is better
	Bytes Unit = "bytes" // memory: growth is judged per hour in bytes
	Share Unit = "share" // errors: lower is better, 0..1
)

// Series is one figure per slice; NaN where a slice has none.
type Series struct {
	Name   string // "aggregate", "p99 TTFT", "server memory"
	Field  string // its JSON name: aggregate_tok_s, ttft_p99_ms, …
	Unit   Unit
	Values []float64
}

// Input is what a verdict is judged from.
type Input struct {
	Slice time.Duration   // the slices' length
	At    []time.Duration // each slice's start, from the stage's start
	Len   []time.Duration // each slice's length (the last may be short); nil: all Slice
	// Warmup is how many leading slices to leave out; -1: the default,
	// the first slice or the first 5% of them, whichever is more.
	Warmup int
	Series []Series
	// Host is, per slice, the share of the time the machine's CPUs were
	// contended (how long some task, tokperf's or another's, waited for
	// one), NaN where unknown; nil: not measured. A change point at which
	// it changes by HostShiftMin or more is the host's, not the server's.
	Host []float64
	// Unread says, a phrase each, which figures were not read at all and
	// why ("server memory not read (…): a leak would not show"): the
	// verdict says so rather than stay silent, which would read as "no
	// leak".
	Unread []string
}

// Figure is the judgement of one series.
type Figure struct {
	Name  string `json:"name"`
	Field string `json:"field"`
	Unit  Unit   `json:"unit"`
	N     int    `json:"slices"`
	// Level is the trend line's value at the first measured slice.
	Level float64 `json:"level"`
	// PctPerH is the trend in % of Level per hour with its 95% interval
	// (memory: PerH in bytes per hour instead).
	PctPerH   float64 `json:"pct_per_h"`
	PctPerHLo float64 `json:"pct_per_h_lo"`
	PctPerHHi float64 `json:"pct_per_h_hi"`
	PerH      float64 `json:"per_h"`
	PerHLo    float64 `json:"per_h_lo"`
	PerHHi    float64 `json:"per_h_hi"`
	// SpanS is the measured span, from the first measured slice's middle
	// to the last's, in seconds: the text says each trend as its move over
	// it (rate × span), in the figure's one unit, not per hour or minute.
	SpanS float64 `json:"span_s"`
	// Changes are the change points the data chose over a smooth drift
	// (a line or a parabola), kept only when one shifts the level by
	// ShiftMin or more (State "shift").
	Changes []Change `json:"changes,omitempty"`
	// State is flat, drift (the trend), shift (a change point), growth
	// (memory) or host (a change point that came with a change in the
	// host's CPU contention: the host's, not the server's); Worse says
	// whether the move is for the worse.
	State string `json:"state"`
	Worse bool   `json:"worse"`
	// HostBefore and HostAfter are the host's CPU contention (the share of
	// the time) before and after the change point of a State host.
	HostBefore float64 `json:"host_before,omitempty"`
	HostAfter  float64 `json:"host_after,omitempty"`
}

// HostShiftMin is how much the host's CPU contention (a share of the
// time) must change at a change point for the point to be the host's.
const HostShiftMin = 0.10

// Change is a shift of level at a slice.
type Change struct {
	Slice  int           `json:"slice"`  // the first slice of the new level
	At     time.Duration `json:"at_ns"`  // its start
	Before float64       `json:"before"` // median of the segment before
	After  float64       `json:"after"`  // and after
	Pct    float64       `json:"pct"`    // 100·(after/before − 1)
}

// Verdict is the run's stability with its numbers.
type Verdict struct {
	Kind     string   `json:"kind"` // stable, degrading, improving, too_short
	Slices   int      `json:"slices"`
	Measured int      `json:"measured"`
	Warmup   int      `json:"warmup"`
	Short    int      `json:"short"` // slices cut short, left out
	Figures  []Figure `json:"figures"`
	// Unread are the figures that could not be judged because they were
	// not read (Input.Unread).
	Unread []string `json:"not_read,omitempty"`
	Text   string   `json:"text"`
}

// Judge judges in's series over its measured slices.
func Judge(in Input) Verdict {
	n := len(in.At)
	v := Verdict{Slices: n, Figures: []Figure{}, Unread: in.Unread}
	w := in.Warmup
	if w < 0 {
		w = max(1, int(math.Ceil(0.05*float64(n))))
	}
	v.Warmup = min(w, n)
	var keep []int
	for i := v.Warmup; i < n; i++ {
		if in.Len != nil && in.Slice > 0 && in.Len[i] < in.Slice*9/10 {
			v.Short++
			continue
		}
		keep = append(keep, i)
	}
	v.Measured = len(keep)
	if v.Measured < MinSlices {
		v.Kind = "too_short"
		v.Text = fmt.Sprintf("too short to judge: %d measured slices (%s), at least %d needed", v.Measured, v.excluded(), MinSlices)
		return v
	}
	worse, better, loose := false, false, ""
	for _, s := range in.Series {
		var x, y []float64
		var at []time.Duration
		var idx []int
		for _, i := range keep {
			if i < len(s.Values) && !math.IsNaN(s.Values[i]) && !math.IsInf(s.Values[i], 0) {
				x = append(x, (in.At[i] + in.length(i)/2).Hours())
				y = append(y, s.Values[i])
				at = append(at, in.At[i])
				idx = append(idx, i)
			}
		}
		if len(y) < MinSlices {
			continue
		}
		f := judge(s, x, y, at, idx)
		in.attribute(&f, idx)
		if span := x[len(x)-1] - x[0]; loose == "" && f.Field == "aggregate_tok_s" && f.State == "flat" {
			// Stable is a finding: the interval must rule out a large
			// drift over the run (StableWithin), not merely include none.
			lo, hi := f.PctPerHLo*span, f.PctPerHHi*span
			if math.Max(math.Abs(lo), math.Abs(hi)) > 100*StableWithin {
				loose = fmt.Sprintf("%s could have moved %+.0f%% to %+.0f%% over the %s measured (95%% interval); stable needs both within ±%.0f%%", f.Name, lo, hi, At(time.Duration(span*float64(time.Hour))), 100*StableWithin)
			}
		}
		if f.State != "flat" && f.State != "host" {
			if f.Worse {
				worse = true
			} else {
				better = true
			}
		}
		v.Figures = append(v.Figures, f)
	}
	switch {
	case worse:
		v.Kind = "degrading"
	case better:
		v.Kind = "improving"
	case loose != "":
		v.Kind = "too_short"
		v.Text = fmt.Sprintf("too short to judge: %s; run longer, or with more requests per slice (%d slices, %s)", loose, v.Measured, v.excluded())
		return v
	default:
		v.Kind = "stable"
	}
	v.Text = v.text()
	return v
}

// attribute gives a shifted figure's biggest change point to the host
// when the host's CPU contention changed by HostShiftMin or more between
// the segments either side of it (idx are the slices the figure read).
func (in Input) attribute(f *Figure, idx []int) {
	if f.State != "shift" || in.Host == nil {
		return
	}
	c := f.biggest()
	k := slices.Index(idx, c.Slice)
	if k < 0 {
		return
	}
	from, to := 0, len(idx)
	for _, o := range f.Changes {
		if j := slices.Index(idx, o.Slice); j >= 0 && j < k {
			from = max(from, j)
		} else if j > k {
			to = min(to, j)
		}
	}
	level := func(a, b int) float64 {
		var h []float64
		for _, i := range idx[a:b] {
			if i < len(in.Host) && !math.IsNaN(in.Host[i]) {
				h = append(h, in.Host[i])
			}
		}
		return sortedMedian(h)
	}
	before, after := level(from, k), level(k, to)
	if math.Abs(after-before) >= HostShiftMin {
		f.State, f.Worse, f.HostBefore, f.HostAfter = "host", false, before, after
	}
}

func (in Input) length(i int) time.Duration {
	if in.Len != nil {
		return in.Len[i]
	}
	return in.Slice
}

// judge is one series' figure.
func judge(s Series, x, y []float64, at []time.Duration, idx []int) Figure {
	f := Figure{Name: s.Name, Field: s.Field, Unit: s.Unit, N: len(y), State: "flat"}
	t, wide := theilSen(x, y, 1.959964, DecideZ)
	f.Level = t.At(x[0])
	f.PerH, f.PerHLo, f.PerHHi = t.Slope, t.Lo, t.Hi
	if f.Level != 0 {
		f.PctPerH, f.PctPerHLo, f.PctPerHHi = 100*t.Slope/math.Abs(f.Level), 100*t.Lo/math.Abs(f.Level), 100*t.Hi/math.Abs(f.Level)
	}
	span := x[len(x)-1] - x[0]
	f.SpanS = span * 3600
	lowerBetter := s.Unit != TokS
	// The decision takes the 99% interval: five figures judged at 95% each
	// would call one steady run in five unstable.
	excludesZero := wide.Lo > 0 || wide.Hi < 0
	if s.Unit == Bytes {
		if excludesZero && math.Abs(t.Slope)*span >= MemoryMin*math.Abs(f.Level) {
			f.State, f.Worse = "growth", t.Slope > 0
		}
		return f
	}
	sigma := noise(y)
	if sigma > 0 {
		n := float64(len(y))
		pen := math.Log(n)
		cuts := Segment(clip(y, sigma, 6), sigma, SegmentPenalty*pen)
		// The data choose between a smooth drift (a line, or a parabola
		// for one that bends) and steps by BIC with the noise known:
		// SSE/σ² plus ln n for each parameter. Steps must win by
		// StepMargin·ln n more: a smooth drift cut into a staircase fits
		// about as well, and is a drift.
		cSmooth := min(lineSSE(x, y)/(sigma*sigma)+2*pen, quadSSE(x, y)/(sigma*sigma)+3*pen)
		cSteps := segmentsSSE(y, cuts)/(sigma*sigma) + float64(1+2*len(cuts))*pen
		if len(cuts) > 0 && cSteps+StepMargin*pen < cSmooth {
			from := 0
			for k, c := range cuts {
				to := len(y)
				if k+1 < len(cuts) {
					to = cuts[k+1]
				}
				before, after := sortedMedian(y[from:c]), sortedMedian(y[c:to])
				ch := Change{Slice: idx[c], At: at[c], Before: before, After: after}
				if before != 0 {
					ch.Pct = 100 * (after/before - 1)
				}
				f.Changes = append(f.Changes, ch)
				from = c
			}
			if big := f.biggest(); big != nil && math.Abs(big.Pct) >= 100*ShiftMin {
				f.State, f.Worse = "shift", (big.Pct > 0) == lowerBetter
				return f
			}
			f.Changes = nil // too small to be a shift: the trend says it
		}
	}
	// A drift is a move of DriftMin or more over the span that the 99%
	// interval holds at its near end: an interval that merely excludes
	// zero (a soak of seconds, its slices' p99 a few dozen requests each)
	// would call a transient of a few percent a server degrading.
	if excludesZero && math.Min(math.Abs(wide.Lo), math.Abs(wide.Hi))*span >= DriftMin*math.Abs(f.Level) {
		f.State, f.Worse = "drift", (t.Slope > 0) == lowerBetter
	}
	return f
}

// biggest is the change point that moves the level most.
func (f *Figure) biggest() *Change {
	var best *Change
	for i := range f.Changes {
		if best == nil || math.Abs(f.Changes[i].Pct) > math.Abs(best.Pct) {
			best = &f.Changes[i]
		}
	}
	return best
}

func (v *Verdict) excluded() string {
	s := fmt.Sprintf("%d warm-up slice", v.Warmup)
	if v.Warmup != 1 {
		s += "s"
	}
	s += " left out"
	if v.Short > 0 {
		s += fmt.Sprintf(", %d cut short", v.Short)
	}
	return s
}

// text is the verdict's sentence: the kind, then each figure with its
// numbers, then what was left out.
func (v *Verdict) text() string {
	var parts []string
	for _, f := range v.Figures {
		parts = append(parts, f.Text())
	}
	parts = append(parts, v.Unread...)
	return fmt.Sprintf("%s: %s (%d slices, %s)", v.Kind, strings.Join(parts, "; "), v.Measured, v.excluded())
}

// Text is the figure's phrase, each trend as its move over the measured
// span with the move's 95% interval: "aggregate −0.3% over 7m [−0.9, +0.4]",
// "p99 TTFT +41% at 35m (change point, 1.21 s → 1.71 s)",
// "server memory +1.30 GB over 1h [1.20, 1.40]", "p99 ITL flat".
func (f Figure) Text() string {
	switch {
	case f.Unit == Bytes && f.State == "flat":
		return f.Name + " flat"
	case f.Unit == Bytes:
		h := f.SpanS / 3600
		return fmt.Sprintf("%s %s over %s [%s, %s]", f.Name, gb(f.PerH*h, true), f.span(), gb(f.PerHLo*h, false), gb(f.PerHHi*h, false))
	case f.State == "shift":
		c := f.biggest()
		return fmt.Sprintf("%s %+.0f%% at %s (change point, %s → %s)", f.Name, c.Pct, At(c.At), value(c.Before, f.Unit), value(c.After, f.Unit))
	case f.State == "host":
		c := f.biggest()
		return fmt.Sprintf("%s %+.0f%% at %s with the host, not the server (CPU contended %.0f%% → %.0f%% of the time)", f.Name, c.Pct, At(c.At), 100*f.HostBefore, 100*f.HostAfter)
	case f.State == "drift", f.Field == "aggregate_tok_s":
		// The throughput's trend is said even when flat: it is the headline.
		return f.Name + " " + f.move()
	}
	return f.Name + " flat"
}

// move is the trend as the share it moved the figure over the measured
// span, with its 95% interval: "+9.8% over 18s [+6.1, +64]".
func (f Figure) move() string {
	h := f.SpanS / 3600
	return fmt.Sprintf("%s over %s [%s, %s]", signed(f.PctPerH*h), f.span(), signed(f.PctPerHLo*h), signed(f.PctPerHHi*h))
}

// span is the measured span as a report prints it: "18s", "7m", "1h05m".
func (f Figure) span() string { return At(time.Duration(f.SpanS * float64(time.Second))) }

// signed is a share in percent with its sign, to two significant
// figures at most and one decimal: "+9.8%", "-64%", "+0.3%".
func signed(p float64) string {
	if math.Abs(p) >= 10 {
		return fmt.Sprintf("%+.0f%%", p)
	}
	return fmt.Sprintf("%+.1f%%", p)
}

// At is an offset into a stage as a report prints it, to the second:
// "45s", "1m30s", "35m", "1h05m", "1h05m30s".
func At(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, sec := int(d/time.Hour), int(d/time.Minute)%60, int(d/time.Second)%60
	switch {
	case h > 0 && sec > 0:
		return fmt.Sprintf("%dh%02dm%02ds", h, m, sec)
	case h > 0:
		return fmt.Sprintf("%dh%02dm", h, m)
	case m > 0 && sec > 0:
		return fmt.Sprintf("%dm%02ds", m, sec)
	case m > 0:
		return fmt.Sprintf("%dm", m)
	}
	return fmt.Sprintf("%ds", sec)
}

func gb(b float64, sign bool) string {
	if sign {
		return fmt.Sprintf("%+.2f GB", b/1e9)
	}
	return fmt.Sprintf("%.2f", b/1e9)
}

func value(v float64, u Unit) string {
	switch u {
	case Ms:
		if math.Abs(v) >= 1000 {
			return fmt.Sprintf("%.2f s", v/1000)
		}
		return fmt.Sprintf("%.1f ms", v)
	case TokS:
		if math.Abs(v) < 100 {
			return fmt.Sprintf("%.1f tok/s", v)
		}
		return fmt.Sprintf("%.0f tok/s", v)
	case Share:
		return fmt.Sprintf("%.1f%%", 100*v)
	}
	return fmt.Sprintf("%g", v)
}
