package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
)

// MaxSliceRows is how many slices the text report lists per stage; a
// longer run shows every k-th slice (all are in the CSV and the JSON).
const MaxSliceRows = 60

// sliced reports whether any stage of r was cut into slices.
func sliced(r *analyze.Run) bool {
	for _, s := range r.Stages {
		if len(s.Slices) > 0 {
			return true
		}
	}
	return false
}

// sliceCols are the slice table's columns; sliceRow fills them.
var sliceCols = []Column{{"stage", "", -1}, {"slice", "", 0}, {"from", "s", 0}, {"length", "s", 1}, {"measured", "", -1},
	{"requests", "", 0}, {"ok", "", 0}, {"errors", "", 0}, {"aggregate", "tok/s", 3},
	{"TTFT p50", "ms", 1}, {"TTFT p99", "ms", 1}, {"ITL p50", "ms", 2}, {"ITL p99", "ms", 2}, {"TPOT p50", "ms", 2}, {"TPOT p99", "ms", 2},
	{"E2E p50", "ms", 0}, {"E2E p99", "ms", 0}, {"server memory", "GB", 3}, {"preemptions", "", 0}, {"max running", "", 0}, {"max waiting", "", 0},
	{"GPU memory", "MiB", 0}, {"GPU power", "W", 0}}

func sliceRow(st analyze.Stage, i int) []any {
	s := st.Slices[i]
	p := func(d record.SliceDist, v float64) float64 {
		if d.N == 0 {
			return math.NaN()
		}
		return v
	}
	zeroNaN := func(v float64) float64 {
		if v == 0 {
			return math.NaN()
		}
		return v
	}
	measured := "yes"
	if v := st.Stability; v != nil && i < v.Warmup {
		measured = "warm-up"
	} else if v != nil && v.Short > 0 && i == len(st.Slices)-1 && s.Len() < 9*(st.Slices[0].Len())/10 {
		measured = "short"
	}
	return []any{analyze.Label(st.Stage), s.Index, (s.From - st.Slices[0].From).Seconds(), s.Len().Seconds(), measured,
		s.Requests, s.OK, s.Errors, s.AggregateTokS,
		p(s.TTFT, s.TTFT.P50), p(s.TTFT, s.TTFT.P99), p(s.ITL, s.ITL.P50), p(s.ITL, s.ITL.P99), p(s.TPOT, s.TPOT.P50), p(s.TPOT, s.TPOT.P99),
		p(s.E2E, s.E2E.P50), p(s.E2E, s.E2E.P99), zeroNaN(s.ResidentBytes / 1e9), s.Preemptions, s.MaxRunning, s.MaxWaiting,
		zeroNaN(s.GPUMemMiB), zeroNaN(s.GPUPowerW)}
}

// sliceTable is every slice of every stage, one row each: the CSV of a
// sliced run, and the second table of its Markdown.
func sliceTable(r *analyze.Run) *Table {
	t := &Table{Columns: sliceCols, Title: "time slices"}
	for _, st := range r.Stages {
		for i := range st.Slices {
			t.Rows = append(t.Rows, sliceRow(st, i))
		}
		if st.Stability != nil {
			t.Lines = append(t.Lines, fmt.Sprintf("stability %s: %s", analyze.Label(st.Stage), st.Stability.Text))
		}
	}
	return t
}

// Slices writes a stage's slice table (at most MaxSliceRows rows) and its
// stability verdict.
func Slices(w io.Writer, st analyze.Stage) {
	if len(st.Slices) == 0 {
		return
	}
	every := (len(st.Slices) + MaxSliceRows - 1) / MaxSliceRows
	head := []string{"slice", "from", "requests", "errors", "tok/s", "TTFT p50/p99 ms", "ITL p50/p99 ms", "TPOT p50 ms", "server GB", ""}
	var rows [][]string
	aggPrec := slicePrec(st.Slices)
	for i, s := range st.Slices {
		if i%every != 0 && i != len(st.Slices)-1 {
			continue
		}
		r := sliceRow(st, i)
		mem := "-"
		if s.ResidentBytes > 0 {
			mem = num(s.ResidentBytes/1e9, 3)
		}
		note := ""
		if m := r[4].(string); m != "yes" {
			note = m
		}
		rows = append(rows, []string{fmt.Sprint(s.Index), analyze.SliceLabel(s.From - st.Slices[0].From), fmt.Sprint(s.Requests), fmt.Sprint(s.Errors),
			num(s.AggregateTokS, aggPrec), latency(r[9].(float64), r[10].(float64)), latency(r[11].(float64), r[12].(float64)), num(r[13].(float64), 2), mem, note})
	}
	fmt.Fprintf(w, "%s: %d time slices of %v", analyze.Label(st.Stage), len(st.Slices), st.Slices[0].Len().Round(time.Millisecond))
	if every > 1 {
		fmt.Fprintf(w, " (every %d shown; all are in --format csv)", every)
	}
	fmt.Fprintln(w)
	aligned(w, head, rows, 0)
	if v := st.Stability; v != nil {
		fmt.Fprintf(w, "stability %s: %s\n", analyze.Label(st.Stage), v.Text)
	}
}

// slicePrec is the decimals that show every slice's aggregate to three
// significant digits or more (a 0.1% step at 100 tok/s, 1% at 1 tok/s),
// so that a drift of a few percent a minute is visible slice to slice.
func slicePrec(slices []record.Slice) int {
	low := math.Inf(1)
	for _, s := range slices {
		if s.AggregateTokS > 0 {
			low = min(low, s.AggregateTokS)
		}
	}
	if math.IsInf(low, 0) {
		return 1
	}
	return min(max(1, 2-int(math.Floor(math.Log10(low)))), 4)
}

// aligned writes a Markdown-shaped table with padded columns (at least
// minWidth wide), numbers right-aligned.
func aligned(w io.Writer, head []string, rows [][]string, minWidth int) {
	width := make([]int, len(head))
	for i, c := range head {
		width[i] = max(len([]rune(c)), minWidth)
	}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(cells []string, right bool) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if right {
				b.WriteString(" " + pad + c + " |")
			} else {
				b.WriteString(" " + c + pad + " |")
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(head, false)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = strings.Repeat("-", max(width[i]-1, 0)) + ":"
	}
	line(sep, false)
	for _, r := range rows {
		line(r, true)
	}
}

// RepeatLines are one line per repeated level: each figure's mean with
// its 95% interval across the repeats and their coefficient of variation.
func RepeatLines(r *analyze.Run) []string {
	var out []string
	for _, rep := range r.Repeats {
		var parts []string
		for _, f := range rep.Figures {
			p := fmt.Sprintf("%s %s", f.Name, num(f.Mean, 1))
			if f.Lo != nil && f.Hi != nil {
				p += fmt.Sprintf(" [%s, %s]", num(*f.Lo, 1), num(*f.Hi, 1))
			}
			if f.CV != nil {
				p += fmt.Sprintf(" CV %.1f%%", 100**f.CV)
			}
			parts = append(parts, p)
		}
		out = append(out, fmt.Sprintf("repeats %s (%d, mean [95%% interval]): %s", rep.Label, rep.N, strings.Join(parts, "; ")))
	}
	return out
}
