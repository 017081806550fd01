package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
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
		for col, key := range map[int]string{1: "aggregate_tok_s", 6: "output_tokens", 7: "wall_s", 8: "errors"} {
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
