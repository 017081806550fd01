package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
)

// f1 prints one decimal, rounding half away from zero (343.25 → 343.3).
func f1(x float64) string { return fmt.Sprintf("%.1f", math.Round(x*10)/10) }

func or(s, unknown string) string {
	if s == "" {
		return unknown
	}
	return s
}

func gpuCount(n int) string {
	if n == 0 {
		return "GPUs unknown"
	}
	return fmt.Sprintf("%d GPUs", n)
}

// Fields writes the fairness list and its verdict.
func Fields(w io.Writer, a, b string, fields []analyze.Field, verdict string) {
	wa, wb := len(a), len(b)
	for _, f := range fields {
		wa, wb = max(wa, len([]rune(or(f.A, "?")))), max(wb, len([]rune(or(f.B, "?"))))
	}
	fmt.Fprintf(w, "setup:\n  %-21s %-*s  %-*s\n", "", wa, a, wb, b)
	for _, f := range fields {
		fmt.Fprintf(w, "  %-21s %-*s  %-*s  %s\n", f.Name, wa, or(f.A, "?"), wb, or(f.B, "?"), f.Verdict)
	}
	fmt.Fprintf(w, "verdict: %s\n", verdict)
}

// Baseline writes a run against a published baseline: both numbers, the
// ratio with its arithmetic, the per-GPU ratio when GPU counts differ.
func Baseline(w io.Writer, c *analyze.BaselineComparison) {
	run, b, rs, fields, verdict, claim := c.Run, c.Baseline, c.Ratios, c.Fields, c.Verdict, c.Claim
	fmt.Fprintf(w, "%s (%s) against baseline %s (%s; source: %s)\n\n", run.Name, gpuCount(run.GPUs), b.Name, gpuCount(b.GPUs), or(b.Source, "not stated"))
	if len(rs) == 0 {
		fmt.Fprintf(w, "no concurrency level is shared: the run has %v, the baseline %v\n", run.Levels, analyze.BaselineSide(b).Levels)
	} else {
		perGPU := false
		for _, r := range rs {
			perGPU = perGPU || r.PerGPU
		}
		head := "| C | this run tok/s | baseline tok/s | ratio |"
		sep := "|--:|--:|--:|---|"
		if perGPU {
			head += fmt.Sprintf(" per GPU (%d vs %d GPUs) | per-GPU ratio |", run.GPUs, b.GPUs)
			sep += "---|--:|"
		}
		fmt.Fprintln(w, head)
		fmt.Fprintln(w, sep)
		for _, r := range rs {
			row := fmt.Sprintf("| %d | %s | %s | %s / %s = %.2f× |", r.C, f1(r.Run), f1(r.Base), f1(r.Run), f1(r.Base), r.Ratio)
			if perGPU {
				row += fmt.Sprintf(" %s / %s | %.2f× per GPU |", f1(r.RunGPU), f1(r.BaseGPU), r.GPURatio)
			}
			fmt.Fprintln(w, row)
		}
		if run.GPUs == 0 && b.GPUs > 0 {
			fmt.Fprintln(w, "(the run's GPU count is unknown: give --gpus for the per-GPU ratio)")
		}
	}
	if !c.Basis.Judged() {
		fmt.Fprintln(w, "ratios "+analyze.NotJudged(c.Basis.Withheld))
	}
	fmt.Fprintln(w)
	Fields(w, "this run", "baseline", fields, verdict)
	if claim != "" {
		fmt.Fprintln(w, "claim: "+claim)
	}
}

// Pairs writes an A/B comparison at each shared stage: both figures and
// B / A, or ~ where the test finds no significant difference; then the
// setup differences of each pair.
func Pairs(w io.Writer, c *analyze.Comparison) {
	names := c.Files
	fmt.Fprintf(w, "B / A for each metric (A = %s); ~ where the difference is not significant\n", names[0])
	fmt.Fprintln(w, "("+abMethod+")")
	fmt.Fprintln(w)
	for bi := 1; bi < len(names); bi++ {
		if len(names) > 2 {
			fmt.Fprintf(w, "B = %s\n", names[bi])
		}
		fmt.Fprintln(w, "| C | metric | A | B | B / A |")
		fmt.Fprintln(w, "|--:|---|--:|--:|---|")
		for _, st := range c.Stages {
			if len(st.Metrics) < bi {
				continue
			}
			for _, m := range st.Metrics[bi-1] {
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", st.Label, m.Name, num(m.A, 1), num(m.B, 1), ratioCell(m))
			}
		}
		fmt.Fprintln(w)
		for _, l := range resolutionLines(c, bi) {
			fmt.Fprintln(w, l)
		}
	}
	for _, n := range c.Notes {
		fmt.Fprintln(w, "note: "+n)
	}
	if len(c.Notes) > 0 {
		fmt.Fprintln(w)
	}
	for _, f := range c.Fairness {
		if len(names) > 2 {
			fmt.Fprintf(w, "B = %s:\n", f.B)
		}
		Fields(w, "A", "B", f.Fields, f.Verdict)
	}
	if len(c.Energy) > 0 {
		fmt.Fprintln(w, "\nEnergy and cost per token (compared only at the same batch, lengths, GPU count and precision):")
		for _, f := range c.Energy {
			fmt.Fprintln(w, "  "+EnergyLine(f))
		}
	}
	for _, x := range c.Speculation {
		Speculation(w, x)
	}
}

// SpecLine says what a stage of a run with speculative decoding shows of
// it alone; empty for a run without it, or a stage without decode figures.
func SpecLine(r *analyze.Run, s *analyze.Stage) string {
	l, ok := analyze.SpecAlone(s)
	if !ok || !analyze.Speculative(r) {
		return ""
	}
	acc := ""
	if l.AcceptRate > 0 {
		acc = fmt.Sprintf(", %.0f%% of drafted tokens accepted", 100*l.AcceptRate)
	}
	return fmt.Sprintf("%s: speculative decoding: %.2f tokens per verify step (%s%s; %.2f decode tokens per chunk), a verify step every %.2f ms; its speed-up is read against a run without it: tokperf compare BASE %s",
		l.Label, l.TokensPerStep, l.Source, acc, l.ChunkTokens, l.StepMs, cmp.Or(r.File, "THIS"))
}

// speculationHTML is Speculation as a page's section; empty for none.
func speculationHTML(xs []*analyze.Speculation) string {
	var b strings.Builder
	for _, x := range xs {
		fmt.Fprintf(&b, "<h3>Speculative decoding: %s against %s (without)</h3>\n", text(x.Spec), text(x.Base))
		for _, l := range x.Levels {
			fmt.Fprintf(&b, "<p>%s</p>\n", text(l.Text))
		}
	}
	return b.String()
}

// Speculation writes where speculative decoding's speed-up went, a line
// per level.
func Speculation(w io.Writer, x *analyze.Speculation) {
	fmt.Fprintf(w, "\nspeculative decoding: %s against %s (without); speed-up = tokens per verify step / (verify step ÷ plain step)\n", x.Spec, x.Base)
	for _, l := range x.Levels {
		fmt.Fprintln(w, l.Text)
	}
}

// abMethod says how an A/B's intervals are formed (METRICS.md, "Error
// model").
const abMethod = "95% interval of each ratio from what varies independently: repeat i of A paired with repeat i of B, else each stage's time blocks (its first and last round left out); never its requests as independent draws"

// resolutionLines say, for B number bi, what each stage's comparison
// could resolve, then how to see less; none where no stage has an interval.
func resolutionLines(c *analyze.Comparison, bi int) []string {
	var out []string
	for _, st := range c.Stages {
		if bi-1 < len(st.Resolution) && st.Resolution[bi-1] != "" {
			r := st.Resolution[bi-1]
			if strings.HasPrefix(r, "resolves nothing") {
				out = append(out, fmt.Sprintf("C=%s %s", st.Label, r))
				continue
			}
			out = append(out, fmt.Sprintf("C=%s %s", st.Label, strings.TrimSuffix(r, "; ask for more repeats (--repeat) to see less")))
		}
	}
	if len(out) > 0 {
		out = append(out, "ask for more repeats (--repeat) to see less", "")
	}
	return out
}

func ratioCell(m analyze.Metric) string {
	if m.Withheld != "" {
		return "not judged (see the note)"
	}
	if math.IsInf(m.Ratio, 1) {
		return "from 0 (A finished none)"
	}
	var extra string
	switch {
	case !math.IsNaN(m.Lo):
		extra = fmt.Sprintf(" [%.2f, %.2f]", m.Lo, m.Hi)
	case !math.IsNaN(m.P):
		extra = fmt.Sprintf(" (p=%.3g)", m.P)
	}
	if math.IsNaN(m.Ratio) || math.IsInf(m.Ratio, 0) {
		if !m.Significant {
			return "-"
		}
	} else if math.IsNaN(m.Lo) && math.IsNaN(m.P) {
		// Not tested (a file of summaries holds no per-request samples):
		// the ratio is shown, and said untested rather than hidden.
		return fmt.Sprintf("%.2f× (not tested)", m.Ratio)
	}
	if !m.Significant {
		return "~" + strings.Replace(extra, " ", " ", 1)
	}
	return fmt.Sprintf("%.2f×%s", m.Ratio, extra)
}
