package report

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"text/tabwriter"

	"github.com/tokperf/tokperf/internal/analyze"
)

// ExplainText prints tokperf explain: a table per figure from tokperf's
// figure, through each named cause, to the other tool's, then the
// workloads side by side, what may make tokperf's figures late, the causes
// in words and the one line that says what explains most of it.
func ExplainText(w io.Writer, e *analyze.Explanation) {
	fmt.Fprintf(w, "Why %s (%s) and tokperf (%s) disagree, %s\n", e.PeerName, filepath.Base(e.PeerFile), filepath.Base(e.File), e.Level)
	for _, f := range e.Figures {
		fmt.Fprintln(w)
		explainFigure(w, e.PeerName, f)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Workload\ttokperf\t%s\n", e.PeerName)
	for _, d := range e.Workload {
		mark := ""
		if d.Differs {
			mark = "  ← differs"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s%s\n", d.Name, d.Tokperf, d.Peer, mark)
	}
	tw.Flush()
	if len(e.Validity) > 0 {
		fmt.Fprintln(w, "\nValidity")
		for _, v := range e.Validity {
			fmt.Fprintln(w, "  "+v)
		}
	}
	fmt.Fprintln(w, "\nCauses")
	for _, c := range explainCauses(e) {
		fmt.Fprintln(w, "  "+c)
	}
	fmt.Fprintln(w, "\n"+e.Reading)
}

// explainFigure is one figure's table: a row per step, a column per
// statistic.
func explainFigure(w io.Writer, peer string, f analyze.ExplainFigure) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := fmt.Sprintf("%s, %s (%s: %s)", f.Figure, f.Unit, peer, f.PeerFigure)
	// The numbers are right-aligned by hand, the names left by the writer.
	row := func(name, kind string, xs []float64, cell func(float64) string) {
		fmt.Fprintf(tw, "%s\t%s\t", name, kind)
		for _, x := range xs {
			fmt.Fprintf(tw, "%10s", cell(x))
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprintf(tw, "%s\t\t", head)
	for _, st := range f.Stats {
		fmt.Fprintf(tw, "%10s", st)
	}
	fmt.Fprintln(tw)
	row("tokperf", "", f.Tokperf, plain)
	for _, s := range f.Steps {
		row("  "+s.Cause, s.Kind, s.Delta, signedDelta)
	}
	row("= tokperf's records, "+peer+"'s way", "", f.Recomputed, plain)
	row(peer, "", f.Peer, plain)
	row("unexplained", "", f.Unexplained, signedDelta)
	row("named", "", f.Named, func(x float64) string {
		if math.IsNaN(x) {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100*x)
	})
	tw.Flush()
}

func plain(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return sig(x)
}

func signedDelta(x float64) string {
	switch {
	case math.IsNaN(x):
		return "-"
	case x == 0:
		return "0"
	}
	return fmt.Sprintf("%+.3g", x)
}

// explainCauses are the causes named, each once, with what changed.
func explainCauses(e *analyze.Explanation) []string {
	seen := map[string]bool{}
	var out []string
	for _, f := range e.Figures {
		for _, s := range f.Steps {
			line := s.Cause + " (" + s.Kind + "): " + s.How
			if !seen[line] {
				seen[line] = true
				out = append(out, line)
			}
		}
	}
	return out
}

// explainTable is the explanation as numbers: one row per figure,
// statistic and step, for CSV and Markdown.
func explainTable(e *analyze.Explanation) *Table {
	t := &Table{Title: fmt.Sprintf("why %s (%s) and tokperf (%s) disagree, %s", e.PeerName, e.PeerFile, e.File, e.Level)}
	t.Columns = []Column{{"figure", "", -1}, {"unit", "", -1}, {"statistic", "", -1}, {"step", "", -1}, {"kind", "", -1}, {"value", "", 4}}
	for _, f := range e.Figures {
		for i, st := range f.Stats {
			add := func(step, kind string, v float64) {
				t.Rows = append(t.Rows, []any{f.Figure, f.Unit, st, step, kind, v})
			}
			add("tokperf", "", f.Tokperf[i])
			for _, s := range f.Steps {
				add(s.Cause, s.Kind, s.Delta[i])
			}
			add("recomputed", "", f.Recomputed[i])
			add(e.Peer, "", f.Peer[i])
			add("unexplained", "", f.Unexplained[i])
			add("named share", "", f.Named[i])
		}
	}
	for _, d := range e.Workload {
		t.Lines = append(t.Lines, fmt.Sprintf("%s: tokperf %s; %s %s", d.Name, d.Tokperf, e.PeerName, d.Peer))
	}
	t.Lines = append(t.Lines, e.Validity...)
	t.Lines = append(t.Lines, explainCauses(e)...)
	t.Lines = append(t.Lines, e.Reading)
	return t
}
