package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
)

// TwinText is the human report of a fitted twin: each measured level
// against its replay, the parameters, the notes, the predictions and the
// profile.
func TwinText(w io.Writer, m *analyze.Twin) {
	var cs []string
	for _, l := range m.Levels {
		cs = append(cs, fmt.Sprint(l.Concurrency))
	}
	fmt.Fprintf(w, "digital twin of %s (%s, %s), fitted to C=%s in %d replays of its requests\n\n", m.File, m.Model, m.Engine, strings.Join(cs, ", "), m.Evaluations)
	if len(m.Levels) > 0 {
		head := []string{"C", "n"}
		for _, f := range m.Levels[0].Figures {
			head = append(head, f.Name+" (measured / twin)")
		}
		var rows [][]string
		for _, l := range m.Levels {
			row := []string{fmt.Sprint(l.Concurrency), fmt.Sprint(l.Requests)}
			for _, f := range l.Figures {
				row = append(row, fmt.Sprintf("%s / %s (%s)", sig(f.Measured), sig(f.Twin), signed(f.Error)))
			}
			rows = append(rows, row)
		}
		aligned(w, head, rows, 3)
	}
	fmt.Fprintln(w, "\nparameters (± one standard error from the figures' spread):")
	for _, p := range m.Params {
		pin := ""
		if !p.Pinned {
			pin = "  not pinned down"
		}
		fmt.Fprintf(w, "  %-34s %10s ± %-8s %-3s from %s%s\n", p.Name, sig(p.Value), sig(p.SE), p.Unit, p.From, pin)
	}
	for _, n := range m.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if len(m.Predicted) > 0 {
		fmt.Fprintln(w)
		if !m.Basis.Judged() {
			fmt.Fprintln(w, "predictions "+analyze.NotJudged(m.Basis.Withheld))
		}
		twinPredicted(w, m)
	}
	if m.SLO != nil {
		fmt.Fprintf(w, "\nslo: %s\n", m.SLO.Text)
	}
	if m.Verdict != "" {
		fmt.Fprintf(w, "\nverdict: %s\n", m.Verdict)
	}
	if m.ProfileFile != "" {
		fmt.Fprintf(w, "\nprofile: %s (tokperf sim --profile %s serves it)\n", m.ProfileFile, m.ProfileFile)
	} else {
		fmt.Fprintf(w, "\nprofile (-o FILE writes it):\n%s", m.Profile)
	}
}

// twinPredicted is the predictions' table, with what a level measured
// where it was run, and what an extrapolation assumes.
func twinPredicted(w io.Writer, m *analyze.Twin) {
	head := []string{"C", "n"}
	for _, f := range m.Predicted[0].Figures {
		head = append(head, f.Name+" (95%)")
	}
	measured := false
	var rows [][]string
	for _, p := range m.Predicted {
		row := []string{fmt.Sprint(p.Concurrency), fmt.Sprint(p.Requests)}
		for i, f := range p.Figures {
			cell := fmt.Sprintf("%s (%s–%s)", sig(f.Value), sig(f.Lo), sig(f.Hi))
			if i < len(p.Measured) && !math.IsNaN(p.Measured[i]) {
				measured = true
				in := "inside"
				if !f.Covers(p.Measured[i]) {
					in = "outside"
				}
				cell += fmt.Sprintf(" measured %s, %s %s", sig(p.Measured[i]), signed(f.Value/p.Measured[i]-1), in)
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	fmt.Fprintln(w, "predicted:")
	aligned(w, head, rows, 3)
	if measured {
		fmt.Fprintln(w, "measured: what the level measured when it was run; the percentage is the prediction's error")
	}
	var each []string
	for _, p := range m.Predicted {
		if !p.Beyond || m.Shape == nil || len(p.Figures) == 0 || len(p.Figures[0].Growths) != len(m.Shape.Growths) {
			continue
		}
		var vals []string
		for i, g := range m.Shape.Growths {
			vals = append(vals, g+" "+sig(p.Figures[0].Growths[i]))
		}
		each = append(each, fmt.Sprintf("C=%d %s", p.Concurrency, strings.Join(vals, ", ")))
	}
	switch {
	case len(each) > 0:
		fmt.Fprintf(w, "beyond the largest fitted level (C=%d) each interval is the envelope of the step time growing past batch %d %s (the note on its growth says whether the data pinned it), each with the fit's uncertainty; the estimate is the straight one (sweep --until-saturated runs the levels and compares)\n", m.Shape.FromConcurrency, m.Shape.FromBatch, orList(m.Shape.Growths))
		fmt.Fprintf(w, "%s under each growth: %s\n", m.Predicted[0].Figures[0].Name, strings.Join(each, "; "))
	case slices.ContainsFunc(m.Predicted, func(p analyze.Predicted) bool { return p.Beyond }):
		fmt.Fprintln(w, "beyond the largest measured level the step time follows the table's last segment: a server that turns compute-bound or splits its batches past it is slower than predicted (sweep --until-saturated runs the levels and compares)")
	}
}

// orList is "a", "a or b", "a, b or c".
func orList(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " or " + xs[len(xs)-1]
}

// num prints a figure with the digits a person needs.
func sig(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v):
		return "-"
	case math.IsInf(v, 0):
		return "∞"
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func signed(e float64) string {
	if math.IsNaN(e) || math.IsInf(e, 0) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", 100*e)
}

func twinTable(m *analyze.Twin) *Table {
	t := &Table{Title: "digital twin of " + m.File}
	t.Columns = []Column{{"kind", "", -1}, {"concurrency", "", 0}, {"requests", "", 0}}
	var names []string
	if len(m.Levels) > 0 {
		for _, f := range m.Levels[0].Figures {
			names = append(names, f.Name)
		}
	}
	for _, n := range names {
		t.Columns = append(t.Columns, Column{n + " measured", "", 3}, Column{n + " twin", "", 3}, Column{n + " lo", "", 3}, Column{n + " hi", "", 3})
	}
	for _, l := range m.Levels {
		row := []any{"fitted", l.Concurrency, l.Requests}
		for _, f := range l.Figures {
			row = append(row, f.Measured, f.Twin, math.NaN(), math.NaN())
		}
		t.Rows = append(t.Rows, row)
	}
	for _, p := range m.Predicted {
		row := []any{"predicted", p.Concurrency, p.Requests}
		for i, f := range p.Figures {
			meas := math.NaN()
			if i < len(p.Measured) {
				meas = p.Measured[i]
			}
			row = append(row, meas, f.Value, f.Lo, f.Hi)
		}
		t.Rows = append(t.Rows, row)
	}
	for _, p := range m.Params {
		t.Lines = append(t.Lines, fmt.Sprintf("%s = %s ± %s %s (pinned: %v)", p.Name, sig(p.Value), sig(p.SE), p.Unit, p.Pinned))
	}
	t.Lines = append(t.Lines, m.Notes...)
	if !m.Basis.Judged() {
		t.Lines = append(t.Lines, "predictions "+analyze.NotJudged(m.Basis.Withheld))
	}
	if m.SLO != nil {
		t.Lines = append(t.Lines, m.SLO.Text)
	}
	return t
}

// TwinChecked prints, under a sweep's verdict, the twin's predictions for
// the levels --until-saturated ran beyond the given ones, each against
// what it then measured.
func TwinChecked(w io.Writer, m *analyze.Twin) {
	if m == nil {
		return
	}
	var rows [][]string
	for _, p := range m.Predicted {
		if len(p.Measured) == 0 {
			continue
		}
		for i, f := range p.Figures {
			if f.Name != "aggregate tok/s" && f.Name != "TTFT p50 ms" {
				continue
			}
			in := "yes"
			if !f.Covers(p.Measured[i]) {
				in = "no"
			}
			rows = append(rows, []string{fmt.Sprint(p.Concurrency), f.Name, sig(f.Value), sig(f.Lo) + "–" + sig(f.Hi), sig(p.Measured[i]), signed(f.Value/p.Measured[i] - 1), in})
		}
	}
	if len(rows) == 0 {
		return
	}
	var cs []string
	for _, l := range m.Levels {
		cs = append(cs, fmt.Sprint(l.Concurrency))
	}
	fmt.Fprintf(w, "\nthe twin fitted to C=%s predicted the levels --until-saturated added, before they ran:\n", strings.Join(cs, ", "))
	if !m.Basis.Judged() {
		fmt.Fprintln(w, "predictions "+analyze.NotJudged(m.Basis.Withheld))
	}
	aligned(w, []string{"C", "figure", "predicted", "95%", "measured", "error", "inside"}, rows, 3)
}

// twinChart is aggregate tok/s against concurrency: what was measured,
// the twin at the fitted levels and its predictions with their intervals.
func twinChart(m *analyze.Twin) *chart {
	if m == nil {
		return nil
	}
	const fig = "aggregate tok/s"
	c := &chart{Name: "twin", Title: "Aggregate output tok/s: measured, and the twin fitted to it", XLabel: "concurrency (requests in flight, log scale)", XLog: true, YLabel: "aggregate output tok/s", YZero: true}
	meas := series{Name: "measured", Color: hue(0), Markers: true}
	tw := series{Name: "twin", Color: hue(1), Line: true, Markers: true}
	lo := series{Name: "95% interval", Color: hue(1), Line: true, Dash: "3 3"}
	hi := series{Color: hue(1), Line: true, Dash: "3 3"}
	for _, l := range m.Levels {
		for _, f := range l.Figures {
			if f.Name == fig {
				x := float64(l.Concurrency)
				meas.Points = append(meas.Points, point{X: x, Y: f.Measured, Tip: fmt.Sprintf("C=%d measured %s tok/s", l.Concurrency, sig(f.Measured))})
				tw.Points = append(tw.Points, point{X: x, Y: f.Twin, Tip: fmt.Sprintf("C=%d twin %s tok/s (%s)", l.Concurrency, sig(f.Twin), signed(f.Error))})
			}
		}
	}
	for _, p := range m.Predicted {
		for i, f := range p.Figures {
			if f.Name != fig {
				continue
			}
			x := float64(p.Concurrency)
			tw.Points = append(tw.Points, point{X: x, Y: f.Value, Tip: fmt.Sprintf("C=%d predicted %s tok/s (%s–%s)", p.Concurrency, sig(f.Value), sig(f.Lo), sig(f.Hi))})
			lo.Points = append(lo.Points, point{X: x, Y: f.Lo})
			hi.Points = append(hi.Points, point{X: x, Y: f.Hi})
			if i < len(p.Measured) && !math.IsNaN(p.Measured[i]) {
				meas.Points = append(meas.Points, point{X: x, Y: p.Measured[i], Tip: fmt.Sprintf("C=%d measured %s tok/s", p.Concurrency, sig(p.Measured[i]))})
			}
		}
	}
	for _, s := range []*series{&meas, &tw} {
		slices.SortFunc(s.Points, func(a, b point) int { return cmp.Compare(a.X, b.X) })
	}
	c.Series = []series{tw}
	if len(lo.Points) > 0 {
		c.Series = append(c.Series, lo, hi)
	}
	c.Series = append(c.Series, meas) // on top: the twin's own markers sit under it
	if len(tw.Points) == 0 {
		return nil
	}
	c.Note = "the twin's line joins its replay of the fitted levels and its predictions; dashed: the predictions' 95% interval (past the fitted levels, the envelope of the step time's plausible growths)"
	return c
}
