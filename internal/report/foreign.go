package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// DescribeSource is what is known of a run read from another tool's file:
// the tool and format, and the setup fields the file states.
func DescribeSource(r *analyze.Run) string {
	s := r.Setup
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s (figures measured by %s, not by tokperf)", r.File, r.Source.Format, r.Source.Tool)
	var known []string
	for _, f := range []struct{ k, v string }{{"model", s.Model}, {"engine", s.Server.Engine}, {"version", s.Server.Version},
		{"endpoint", s.Endpoint}, {"target", s.URL}} {
		if f.v != "" {
			known = append(known, f.k+" "+f.v)
		}
	}
	if s.GPUs > 0 {
		known = append(known, fmt.Sprintf("%d GPUs", s.GPUs))
	}
	if len(known) == 0 {
		known = append(known, "the file names no model, engine or GPU")
	}
	fmt.Fprintf(&b, "\nsetup: %s", strings.Join(known, ", "))
	if w := s.Workload; w.InputTokens > 0 || w.OutputTokens > 0 {
		lengths := fmt.Sprintf("%s-token prompts, %s output tokens", orUnknown(w.InputTokens), orUnknown(w.OutputTokens))
		if r.Source.MeanLengths {
			lengths = fmt.Sprintf("prompts of %s tokens and outputs of %s tokens on average (the file's totals / its completed requests)", orUnknown(w.InputTokens), orUnknown(w.OutputTokens))
		}
		fmt.Fprintf(&b, "\nworkload: %s; EOS and temperature: not in the file", lengths)
	}
	return b.String()
}

// SourceLines are the definitions a run read from another tool's file was
// mapped by, and the figures it lacks.
func SourceLines(src *analyze.Source) []string {
	out := []string{"definitions (" + src.Tool + "'s, mapped onto tokperf's):"}
	for _, d := range src.Definitions {
		out = append(out, "  "+d)
	}
	if len(src.Blank) > 0 {
		out = append(out, "not in the file (blank, not zero): "+strings.Join(src.Blank, ", "))
	}
	return out
}

// headlineBlank blanks the headline cells of figures the file lacks:
// aggregate, tokens, wall and errors (columns 1, 6, 7, 8).
func headlineBlank(rows [][]string, src *analyze.Source) {
	if src == nil {
		return
	}
	for _, row := range rows {
		for col, key := range map[int]string{1: "aggregate_tok_s", 2: "requests_per_s", 10: "output_tokens", 11: "wall_s", 12: "errors"} {
			if !src.Has(key) {
				row[col] = "-"
			}
		}
	}
}

// tableBlank is NaN (a blank cell) for a figure the file lacks, else v.
func tableBlank(src *analyze.Source, key string, v float64) any {
	if !src.Has(key) {
		return math.NaN()
	}
	return v
}

// SourceStageLine is what the headline of a run read from another tool's
// file leaves out: its latency figures beside TTFT and ITL, as p50/p90/p99
// (a percentile the file lacks shown as -), and its effective concurrency.
func SourceStageLine(s summary.Stage, src *analyze.Source) string {
	var parts []string
	for _, f := range []struct {
		name, unit string
		d          stats.Dist
	}{{"TPOT", "ms", s.TPOT}, {"ICL", "ms", s.ICL}, {"E2E", "ms", s.E2E}, {"decode", "tok/s", s.DecodeTokS}, {"request", "tok/s", s.RequestTokS}} {
		if f.d.N > 0 {
			parts = append(parts, fmt.Sprintf("%s p50/p90/p99 %s %s", f.name, three(f.d.P50, f.d.P90, f.d.P99), f.unit))
		}
	}
	if src.Has("effective_concurrency") && s.EffectiveConcurrency > 0 {
		parts = append(parts, fmt.Sprintf("effective concurrency %.2f", s.EffectiveConcurrency))
	}
	if len(parts) == 0 {
		return ""
	}
	return analyze.Label(s) + ": " + strings.Join(parts, "; ")
}

// three prints three figures with one precision that fits them all.
func three(a, b, c float64) string {
	prec, top := 1, 0.0
	for _, v := range []float64{a, b, c} {
		if !math.IsNaN(v) {
			top = math.Max(top, v)
		}
	}
	if top >= 100 {
		prec = 0
	} else if top < 10 {
		prec = 2
	}
	return num(a, prec) + " / " + num(b, prec) + " / " + num(c, prec)
}

// orUnknown is n, or "?" for a length the file does not state.
func orUnknown(n int) string {
	if n <= 0 {
		return "?"
	}
	return fmt.Sprint(n)
}
