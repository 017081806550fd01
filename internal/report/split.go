package report

import (
	"fmt"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/summary"
)

// splitPart is one part of the TTFT split as the report shows it.
type splitPart struct {
	name, color string
	of          func(*summary.Split) *summary.SplitPart
}

// splitParts are the split's parts in the order time passes: the two
// before the request was sent, then the TTFT's.
var splitParts = []splitPart{
	{"client wait", "#999999", func(s *summary.Split) *summary.SplitPart { return &s.ClientWait }},
	{"connect", "#56b4e9", func(s *summary.Split) *summary.SplitPart { return &s.Connect }},
	{"server queue", "#d55e00", func(s *summary.Split) *summary.SplitPart { return s.Queue }},
	{"prefill", "#e69f00", func(s *summary.Split) *summary.SplitPart { return s.Prefill }},
	{"rest", "#0072b2", func(s *summary.Split) *summary.SplitPart { return &s.Rest }},
}

// SplitLine says where a stage's TTFT went, by the parts its server
// reported; empty when it reported none.
func SplitLine(s summary.Stage) string {
	sp := s.TTFTSplit
	if sp == nil {
		return ""
	}
	var in, unknown []string
	for _, p := range splitParts[2:4] {
		if v := p.of(sp); v != nil {
			in = append(in, fmt.Sprintf("%s p50 %.1f ms (%.0f%%)", p.name, v.P50Ms, 100*v.Share))
		} else {
			unknown = append(unknown, strings.TrimPrefix(p.name, "server "))
		}
	}
	rest := "delivery both ways and the server's other work"
	if len(unknown) > 0 {
		rest = "delivery both ways, the server's other work, and its " + strings.Join(unknown, " and ") + ", which it does not report"
	}
	in = append(in, fmt.Sprintf("rest p50 %.1f ms (%.0f%%: %s)", sp.Rest.P50Ms, 100*sp.Rest.Share, rest))
	return fmt.Sprintf("%s: where the TTFT went, over %s whose server reported a part (mean %.1f ms): %s; before sending, client wait p50 %.1f ms, connect p50 %.1f ms",
		analyze.Label(s), record.Plural(sp.Requests, "request"), sp.TTFTMs, strings.Join(in, ", "), sp.ClientWait.P50Ms, sp.Connect.P50Ms)
}

// ttftSplit is one stacked bar per stage of every run: the mean of each
// part of the split, from the request's schedule to its first token.
func (p *page) ttftSplit() *chart {
	c := &chart{Name: "ttft-split", Title: "Where the time to first token went (mean per request)", XLabel: "ms from the request's schedule to its first token", YLabel: "stage", YReverse: true}
	for _, part := range splitParts {
		c.Series = append(c.Series, series{Name: part.name, Color: part.color, Line: true})
	}
	var rows []string
	for _, n := range p.runs {
		for si := range n.run.Stages {
			st := n.run.Stages[si].Stage
			sp := st.TTFTSplit
			if sp == nil {
				continue
			}
			row := strings.TrimSpace(prefix(len(p.runs), n.name) + analyze.Label(st))
			x, y := 0.0, float64(len(rows))
			for _, part := range splitParts {
				v := part.of(sp)
				if v == nil {
					continue
				}
				tip := fmt.Sprintf("%s: %s mean %.1f ms, p50 %.1f ms, %.0f%% of the TTFT (%d of %d requests reported it)", row, part.name, v.MeanMs, v.P50Ms, 100*v.Share, v.N, sp.Requests)
				if v.MeanMs > 0 {
					c.Segments = append(c.Segments, segment{X1: x, X2: x + v.MeanMs, Y: y, Color: part.color, Tip: tip})
					x += v.MeanMs
				}
			}
			rows = append(rows, row)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	c.Rows = rows
	c.Note = "Server queue and prefill as the server reported them; a part it does not report is in the rest, with the delivery of the request and of the first token."
	return c
}
