// Package report renders stage figures for people. The headline table is
// Markdown-compatible, so it can be pasted as is:
//
//	report.Text(os.Stdout, setup, stages, warnings, verdict)
package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// Columns of the headline table.
var Columns = []string{"C", "aggregate tok/s", "request tok/s", "decode tok/s", "TTFT p50/p99 ms", "ITL p50/p99 ms", "tokens", "wall s", "errors"}

func num(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, v)
}

// latency prints a pair of milliseconds with a precision that fits them.
func latency(a, b float64) string {
	prec := 1
	if math.Max(a, b) >= 100 {
		prec = 0
	} else if math.Max(a, b) < 10 {
		prec = 2
	}
	return num(a, prec) + " / " + num(b, prec)
}

// Rows are the table's cells, one row per stage.
func Rows(stages []summary.Stage) [][]string {
	var rows [][]string
	for _, s := range stages {
		label := fmt.Sprint(s.Concurrency)
		if s.Rate > 0 {
			label = fmt.Sprintf("%g/s", s.Rate)
			if s.Concurrency > 0 {
				label += fmt.Sprintf(" (≤%d)", s.Concurrency)
			}
		}
		errs := 0
		for _, n := range s.Errors {
			errs += n
		}
		errCell := fmt.Sprint(errs)
		if s.Cancelled > 0 {
			errCell += fmt.Sprintf(" (+%d cancelled)", s.Cancelled)
		}
		rows = append(rows, []string{
			label,
			num(s.AggregateTokS, 1),
			num(s.RequestTokS.Mean, 1),
			num(s.DecodeTokS.Mean, 1),
			latency(s.TTFT.P50, s.TTFT.P99),
			latency(s.ITL.P50, s.ITL.P99),
			fmt.Sprint(s.OutputTokens),
			num(s.WallS, 1),
			errCell,
		})
	}
	return rows
}

// Table writes the headline table with aligned columns.
func Table(w io.Writer, stages []summary.Stage) {
	rows := Rows(stages)
	width := make([]int, len(Columns))
	for i, c := range Columns {
		width[i] = max(len([]rune(c)), 3)
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
	line(Columns, false)
	sep := make([]string, len(Columns))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i]-1) + ":"
	}
	line(sep, false)
	for _, r := range rows {
		line(r, true)
	}
}

// Describe is the one-line description of what was measured.
func Describe(s record.Setup) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s on %s", s.Server.Engine, s.Route, s.URL)
	if s.Simulated {
		fmt.Fprintf(&b, " (embedded simulator, profile %s)", s.Profile)
	}
	fmt.Fprintf(&b, ", model %s", s.Model)
	eos := "EOS honoured"
	if s.Workload.IgnoreEOS {
		eos = "ignore_eos"
	}
	fmt.Fprintf(&b, "\nworkload: %d-token prompts, up to %d output tokens, %s, temperature %g", s.Workload.InputTokens, s.Workload.OutputTokens, eos, s.Sampling.Temperature)
	return b.String()
}

// ServerLine sets the server's own timing of the stage's requests beside
// the client's, with the difference; empty when the server reports none.
func ServerLine(s summary.Stage) string {
	var parts []string
	if d := s.ServerDecodeTokS; d.N > 0 {
		parts = append(parts, fmt.Sprintf("decode %.1f tok/s vs the client's %.1f (%+.1f%%)", d.Mean, s.DecodeTokS.Mean, 100*(s.DecodeTokS.Mean/d.Mean-1)))
	}
	if d := s.ServerE2E; d.N > 0 {
		parts = append(parts, fmt.Sprintf("E2E %.0f ms vs the client's %.0f (%+.1f ms)", d.Mean, s.E2E.Mean, s.E2E.Mean-d.Mean))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: the server reports %s, for %d requests", analyze.Label(s), strings.Join(parts, "; "), s.ServerTimed)
}

// Text writes the full human report: what was measured, the table, the
// definitions used, the warnings and the verdict.
func Text(w io.Writer, setup record.Setup, stages []summary.Stage, notes []string, warnings []analyze.Warning, verdict *analyze.Verdict) {
	fmt.Fprintln(w, Describe(setup))
	fmt.Fprintln(w)
	Table(w, stages)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "aggregate = output tokens / stage wall time; request and decode tok/s are means over requests;")
	fmt.Fprintln(w, "TTFT = first token - sent; ITL = chunk gap / tokens in the chunk, per token (docs/METRICS.md).")
	var steady []string
	for _, s := range stages {
		if !math.IsNaN(s.SteadyTokS) && s.SteadyTokS > 0 {
			steady = append(steady, fmt.Sprintf("%s %.1f", analyze.Label(s), s.SteadyTokS))
		}
	}
	if slo := setup.SLO; slo.Set() {
		var parts, good []string
		if slo.TTFTMs > 0 {
			parts = append(parts, fmt.Sprintf("TTFT ≤ %g ms", slo.TTFTMs))
		}
		if slo.TPOTMs > 0 {
			parts = append(parts, fmt.Sprintf("TPOT ≤ %g ms", slo.TPOTMs))
		}
		if slo.E2EMs > 0 {
			parts = append(parts, fmt.Sprintf("E2E ≤ %g ms", slo.E2EMs))
		}
		for _, s := range stages {
			good = append(good, fmt.Sprintf("%s %.2f req/s, %.1f tok/s (%d of %d met)", analyze.Label(s), s.GoodputRequestsPerS, s.GoodputTokS, s.SLOMet, s.OK))
		}
		fmt.Fprintf(w, "goodput (%s): %s\n", strings.Join(parts, ", "), strings.Join(good, "; "))
	}
	if len(steady) > 0 {
		fmt.Fprintf(w, "steady state (tok/s while the target concurrency was in flight): %s\n", strings.Join(steady, ", "))
	}
	for _, s := range stages {
		if s.TokensPerChunk > 1.05 {
			fmt.Fprintf(w, "%s: %.2f tokens per chunk (ICL p50 %.2f ms vs ITL p50 %.2f ms)\n", analyze.Label(s), s.TokensPerChunk, s.ICL.P50, s.ITL.P50)
		}
	}
	for _, s := range stages {
		if line := ServerLine(s); line != "" {
			fmt.Fprintln(w, line)
		}
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	for _, wn := range warnings {
		fmt.Fprintln(w, "warning: "+wn.String())
	}
	if verdict != nil {
		for _, step := range verdict.Steps {
			fmt.Fprintln(w, "scaling: "+step)
		}
		fmt.Fprintln(w, "verdict: "+verdict.Text)
	}
}

// JSON writes every figure of every stage, the warnings and the verdict,
// with the field names of the result files (units in the names).
func JSON(w io.Writer, file string, setup record.Setup, stages []summary.Stage, warnings []analyze.Warning, verdict *analyze.Verdict) error {
	clean := make([]summary.Stage, len(stages))
	for i, s := range stages {
		clean[i] = s
		if math.IsNaN(s.SteadyTokS) {
			clean[i].SteadyTokS = 0 // JSON has no NaN
		}
		for _, d := range []*stats.Dist{&clean[i].ClientQueue, &clean[i].TTFT, &clean[i].TTFO, &clean[i].E2E, &clean[i].TPOT,
			&clean[i].DecodeTokS, &clean[i].RequestTokS, &clean[i].ITL, &clean[i].ICL, &clean[i].ServerDecodeTokS, &clean[i].ServerE2E} {
			if d.N == 0 {
				*d = stats.Dist{}
			}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"file": file, "setup": setup, "stages": clean, "warnings": warnings, "verdict": verdict})
}

// CSV writes the headline table as comma-separated values.
func CSV(w io.Writer, stages []summary.Stage) {
	cw := csv.NewWriter(w)
	cw.Write(Columns)
	for _, r := range Rows(stages) {
		cw.Write(r)
	}
	cw.Flush()
}
