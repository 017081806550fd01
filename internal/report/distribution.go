package report

import (
	"fmt"
	"slices"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
)

// oneLevel says every run on the page has a single stage: a curve against
// load would be one point at the axis's edge, so the page shows each
// figure's distribution instead.
func (p *page) oneLevel() bool {
	for _, n := range p.runs {
		if len(n.run.Stages) != 1 {
			return false
		}
	}
	return len(p.runs) > 0
}

// cdfMetric is one figure drawn as its distribution: the values of a
// stage's requests (or tokens), each with its weight.
type cdfMetric struct {
	name, title, unit, of string
	values                func(tl *analyze.Timeline) (xs, ws []float64)
}

var cdfMetrics = []cdfMetric{
	{"ttft-cdf", "Time to first token (TTFT): its distribution", "TTFT (ms)", "requests", func(tl *analyze.Timeline) (xs, ws []float64) {
		for _, r := range tl.Sample {
			if r.OK && r.FirstToken != record.Unset {
				xs, ws = append(xs, record.Ms(r.FirstToken-r.Sent)), append(ws, 1)
			}
		}
		return xs, ws
	}},
	{"itl-cdf", "Inter-token latency (ITL): its distribution", "ITL (ms per token)", "tokens", func(tl *analyze.Timeline) (xs, ws []float64) {
		// Each gap between two arrivals is shared by the tokens the later
		// one brought (a thinned stream's gap spans several chunks).
		for _, r := range tl.Sample {
			for i := 1; i < len(r.Arrivals); i++ {
				a, b := r.Arrivals[i-1], r.Arrivals[i]
				if n := b.Tokens - a.Tokens; n > 0 {
					xs, ws = append(xs, record.Ms(b.At-a.At)/float64(n)), append(ws, float64(n))
				}
			}
		}
		return xs, ws
	}},
	{"e2e-cdf", "End-to-end latency (E2E): its distribution", "E2E (s)", "requests", func(tl *analyze.Timeline) (xs, ws []float64) {
		for _, r := range tl.Sample {
			if r.OK {
				xs, ws = append(xs, (r.Done-r.Sent).Seconds()), append(ws, 1)
			}
		}
		return xs, ws
	}},
}

// distributions are the one-level page's charts: TTFT, ITL and E2E as
// cumulative distributions, one line per run, from the stage's timeline
// sample (every request up to analyze.TimelineLimit; ITL from the token
// arrivals of analyze.ArrivalLimit of them).
func (p *page) distributions() []*chart {
	var out []*chart
	for _, m := range cdfMetrics {
		c := &chart{Name: m.name, Title: m.title, XLabel: m.unit, YLabel: "share of " + m.of + " at or below (%)", YZero: true}
		var notes []string
		for i, n := range p.runs {
			s := &n.run.Stages[0]
			if s.Timeline == nil {
				continue
			}
			xs, ws := m.values(s.Timeline)
			if len(xs) == 0 {
				continue
			}
			se := series{Name: n.name, Color: hue(i), Line: true, Marker: markerOf(i), Points: cdf(xs, ws, n.name, m.unit)}
			c.Series = append(c.Series, se)
			from := fmt.Sprintf("%d requests", len(s.Timeline.Sample))
			if m.name == "itl-cdf" {
				from = "the token arrivals of a sample of requests"
			} else if s.Timeline.Sampled() {
				from = fmt.Sprintf("a sample of %d of its %d requests", len(s.Timeline.Sample), s.Timeline.Requests)
			}
			notes = append(notes, prefix(len(p.runs), n.name)+analyze.Label(s.Stage)+", from "+from)
		}
		if points(c) > 0 {
			c.Note = joinNotes(notes)
			out = append(out, c)
		}
	}
	return out
}

// cdf is the cumulative distribution of xs weighted by ws, as percent at
// or below each distinct value; the hover value names the percentile.
func cdf(xs, ws []float64, name, unit string) []point {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case xs[a] < xs[b]:
			return -1
		case xs[a] > xs[b]:
			return 1
		}
		return 0
	})
	var total float64
	for _, w := range ws {
		total += w
	}
	var out []point
	var sum float64
	for k, i := range idx {
		sum += ws[i]
		if k+1 < len(idx) && xs[idx[k+1]] == xs[i] {
			continue // one point per distinct value
		}
		y := 100 * sum / total
		out = append(out, point{X: xs[i], Y: y, Tip: fmt.Sprintf("%s: %.1f%% at or below %s %s", name, y, num(xs[i], 2), unit)})
	}
	return steps(thin(out, 400))
}

// steps draws a distribution as it is, a staircase: each value's rise is
// vertical, and the line runs flat between values.
func steps(ps []point) []point {
	out := make([]point, 0, 2*len(ps))
	for i, p := range ps {
		if i > 0 {
			out = append(out, point{X: p.X, Y: ps[i-1].Y})
		}
		out = append(out, p)
	}
	return out
}

// thin keeps at most n points of a long line, evenly spaced, and its last.
func thin(ps []point, n int) []point {
	if len(ps) <= n {
		return ps
	}
	out := make([]point, 0, n+1)
	step := float64(len(ps)) / float64(n)
	for i := 0.0; int(i) < len(ps)-1; i += step {
		out = append(out, ps[int(i)])
	}
	return append(out, ps[len(ps)-1])
}

func joinNotes(notes []string) string {
	out := ""
	for i, n := range notes {
		if i > 0 {
			out += " · "
		}
		out += n
	}
	return out
}
