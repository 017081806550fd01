package report

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
)

// The html page opens with a summary box: what the run found (its verdict)
// and the few numbers a reader looks for first, per run; the tables and
// charts below hold the rest.

// keyNumbers are a run's headline figures in words: the peak aggregate
// and where, a request's decode speed and TTFT at the lightest and the
// peak level, and the failed requests.
func keyNumbers(r *analyze.Run) []string {
	var peak, light *analyze.Stage
	for i := range r.Stages {
		s := &r.Stages[i]
		if s.OK == 0 {
			continue
		}
		if peak == nil || s.AggregateTokS > peak.AggregateTokS {
			peak = s
		}
		if light == nil {
			light = s
		}
	}
	if peak == nil {
		return []string{"no stage finished a request"}
	}
	at := func(s *analyze.Stage) string {
		var parts []string
		if s.DecodeTokS.N > 0 {
			parts = append(parts, f1(s.DecodeTokS.Mean)+" decode tok/s per request")
		}
		if s.TTFT.N > 0 {
			parts = append(parts, "TTFT p50 "+ms(s.TTFT.P50))
		}
		if s.TPOT.N > 0 {
			parts = append(parts, "TPOT p50 "+num(s.TPOT.P50, 2)+" ms")
		}
		return strings.Join(parts, ", ")
	}
	out := []string{fmt.Sprintf("peak aggregate %s tok/s at %s (%s)", f1(peak.AggregateTokS), analyze.Label(peak.Stage), at(peak))}
	if light != peak {
		out = append(out, fmt.Sprintf("at %s: %s tok/s aggregate, %s", analyze.Label(light.Stage), f1(light.AggregateTokS), at(light)))
	}
	failed, total := r.Failed()
	if failed > 0 {
		out = append(out, fmt.Sprintf("%d of %s failed", failed, record.Plural(total, "request")))
	} else {
		out = append(out, fmt.Sprintf("%s, none failed", record.Plural(total, "measured request")))
	}
	return out
}

// ms prints milliseconds with a precision that suits them.
func ms(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

// summaryHTML writes the summary box: the page's own lead lines, then per
// run its verdict and key numbers.
func (p *page) summaryHTML(b *strings.Builder) {
	if len(p.runs) == 0 && len(p.summary) == 0 {
		return
	}
	b.WriteString("<section class=\"summary\" id=\"summary\"><h2>Summary</h2>\n")
	for _, l := range p.summary {
		fmt.Fprintf(b, "<p class=\"verdict\">%s</p>\n", text(l))
	}
	if c := p.baseline; c != nil {
		fmt.Fprintf(b, "<p class=\"verdict\">against %s: %s</p>\n", text(c.Baseline.Name), text(c.Verdict))
		if c.Claim != "" {
			fmt.Fprintf(b, "<p>claim: %s</p>\n", text(c.Claim))
		}
	}
	for _, n := range p.runs {
		if len(p.runs) > 1 {
			fmt.Fprintf(b, "<h3>%s</h3>\n", text(n.name))
		}
		if v := n.run.Verdict; v != nil && v.Text != "" {
			fmt.Fprintf(b, "<p class=\"verdict\">verdict: %s</p>\n", text(v.Text))
		}
		b.WriteString("<ul>")
		for _, l := range keyNumbers(n.run) {
			fmt.Fprintf(b, "<li>%s</li>", text(l))
		}
		if k := len(n.run.Warnings); k > 0 {
			fmt.Fprintf(b, "<li class=\"warn\">%s (<a href=\"#warnings\">below</a>)</li>", text(record.Plural(k, "warning")))
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</section>\n")
}

// compareSummary is an A/B's lead: the aggregate ratio at each shared
// level, for each B.
func compareSummary(c *analyze.Comparison) []string {
	var out []string
	for bi := 1; bi < len(c.Files); bi++ {
		var parts []string
		for _, st := range c.Stages {
			if len(st.Metrics) < bi {
				continue
			}
			for _, m := range st.Metrics[bi-1] {
				if m.Name == "aggregate tok/s" {
					label := st.Label
					if _, err := strconv.Atoi(label); err == nil {
						label = "C=" + label
					}
					parts = append(parts, label+": "+ratioCell(m))
				}
			}
		}
		if len(parts) > 0 {
			out = append(out, fmt.Sprintf("B / A, aggregate tok/s (A = %s, B = %s): %s", filepath.Base(c.Files[0]), filepath.Base(c.Files[bi]), strings.Join(parts, "; ")))
		}
	}
	return out
}

// pairsHTML is Pairs as HTML tables: per B, each shared level's metrics
// with both figures and B / A (bold where significant, ~ where not), then
// the notes and each pair's setup differences.
func pairsHTML(c *analyze.Comparison) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<h2>A/B comparison</h2>\n<p>B / A for each metric (A = %s); ~ where the difference is not significant (%s).</p>\n", text(c.Files[0]), text(abMethod))
	for bi := 1; bi < len(c.Files); bi++ {
		if len(c.Files) > 2 {
			fmt.Fprintf(&b, "<h3>B = %s</h3>\n", text(c.Files[bi]))
		}
		b.WriteString("<table class=\"ab\"><tr><th>C</th><th>metric</th><th>A</th><th>B</th><th>B / A</th></tr>\n")
		for _, st := range c.Stages {
			if len(st.Metrics) < bi {
				continue
			}
			for _, m := range st.Metrics[bi-1] {
				cls := "ns"
				if m.Significant {
					cls = "sig"
				}
				fmt.Fprintf(&b, "<tr><td>%s</td><td class=\"l\">%s</td><td>%s</td><td>%s</td><td class=\"%s\">%s</td></tr>\n",
					text(st.Label), text(m.Name), num(m.A, 1), num(m.B, 1), cls, text(ratioCell(m)))
			}
		}
		b.WriteString("</table>\n")
		for _, l := range resolutionLines(c, bi) {
			if l != "" {
				fmt.Fprintf(&b, "<p>%s</p>\n", text(l))
			}
		}
	}
	for _, n := range c.Notes {
		fmt.Fprintf(&b, "<p class=\"warn\">note: %s</p>\n", text(n))
	}
	for _, f := range c.Fairness {
		if len(c.Files) > 2 {
			fmt.Fprintf(&b, "<h3>Setup: A against %s</h3>\n", text(f.B))
		} else {
			b.WriteString("<h3>Setup (fairness)</h3>\n")
		}
		b.WriteString("<table><tr><th></th><th>A</th><th>B</th><th>verdict</th></tr>\n")
		for _, fd := range f.Fields {
			fmt.Fprintf(&b, "<tr><td class=\"l\">%s</td><td class=\"l\">%s</td><td class=\"l\">%s</td><td class=\"l\">%s</td></tr>\n", text(fd.Name), text(or(fd.A, "?")), text(or(fd.B, "?")), text(fd.Verdict))
		}
		fmt.Fprintf(&b, "</table>\n<p><b>verdict: %s</b></p>\n", text(f.Verdict))
	}
	for _, f := range c.Energy {
		fmt.Fprintf(&b, "<p>%s</p>\n", text(EnergyLine(f)))
	}
	return b.String()
}
