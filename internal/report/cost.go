package report

import (
	"fmt"
	"math"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
)

// CostLines are a stage's cost per token and the physical bound on its
// figures, in words, for every format: "C=8: cost $1.23 per million
// output tokens (1 GPU × $2.50 an hour × 12.0 s / 6,800 tokens)".
func CostLines(s *analyze.Stage) []string {
	var out []string
	if c := s.Cost; c != nil {
		out = append(out, fmt.Sprintf("%s: cost $%.4g per million output tokens (%s × $%.2f a GPU-hour × %.1f s / %d tokens; GPU count from the %s)",
			analyze.Label(s.Stage), c.USDPerMTok, record.Plural(c.GPUs, "GPU"), c.GPUHourUSD, s.WallS, s.OutputTokens, c.GPUsFrom))
	}
	if b := s.Bound; b != nil {
		verdict := "within it"
		if len(b.Over) > 0 {
			verdict = "IMPOSSIBLE: above it"
		}
		out = append(out, fmt.Sprintf("%s: physical bound: decode %.1f tok/s per GPU at batch %.1f, one request %.1f tok/s, compute %.1f tok/s per GPU (%s); measured %.1f tok/s per GPU, %s",
			analyze.Label(s.Stage), b.DecodeTokS, b.Batch, b.RequestTokS, b.ComputeTokS, b.Inputs(), s.AggregateTokS/float64(b.GPUs), verdict))
	}
	return out
}

// costColumns are the energy, cost and bound columns of a run's table,
// only where some stage has them (so a run without stays as it was).
func costColumns(r *analyze.Run) ([]Column, func(s *analyze.Stage) []any) {
	var energy, cost, bound bool
	for _, s := range r.Stages {
		energy = energy || (s.GPU != nil && s.GPU.JPer1000Tokens > 0)
		cost = cost || s.Cost != nil
		bound = bound || s.Bound != nil
	}
	var cols []Column
	var cells []func(s *analyze.Stage) any
	if energy {
		cols = append(cols, Column{"J per 1000 tokens", "", 2})
		cells = append(cells, func(s *analyze.Stage) any {
			if s.GPU == nil || s.GPU.JPer1000Tokens <= 0 {
				return math.NaN()
			}
			return s.GPU.JPer1000Tokens
		})
	}
	if cost {
		cols = append(cols, Column{"USD per Mtok", "", 4})
		cells = append(cells, func(s *analyze.Stage) any {
			if s.Cost == nil {
				return math.NaN()
			}
			return s.Cost.USDPerMTok
		})
	}
	if bound {
		cols = append(cols, Column{"decode bound per GPU", "tok/s", 1}, Column{"impossible", "", -1})
		cells = append(cells, func(s *analyze.Stage) any {
			if s.Bound == nil {
				return math.NaN()
			}
			return s.Bound.DecodeTokS
		}, func(s *analyze.Stage) any { return s.Bound != nil && len(s.Bound.Over) > 0 })
	}
	return cols, func(s *analyze.Stage) []any {
		row := make([]any, len(cells))
		for i, c := range cells {
			row[i] = c(s)
		}
		return row
	}
}

// EnergyLine is one stage's J/token or $/Mtok of A and B, with the ratio
// only where the two may be compared, and why not where they may not.
func EnergyLine(f analyze.EnergyFigure) string {
	ratio := "no ratio"
	if f.Ratio > 0 {
		ratio = fmt.Sprintf("B/A %.3f", f.Ratio)
	}
	return fmt.Sprintf("%s %s: %s %.4g vs %.4g, %s: %s", f.B, f.Stage, f.Name, f.A, f.BV, ratio, f.Verdict)
}

func orNaN(v float64) float64 {
	if v == 0 {
		return math.NaN()
	}
	return v
}

// energyLines are an experiment cell's energy and cost figures, each
// after who is compared with whom.
func energyLines(who string, fs []analyze.EnergyFigure) []string {
	var out []string
	for _, f := range fs {
		out = append(out, who+": "+EnergyLine(f))
	}
	return out
}
