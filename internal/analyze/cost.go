package analyze

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Cost is what a stage's output tokens cost at a GPU-hour price: the
// GPUs' time over the stage's wall time, shared by its output tokens
// (METRICS.md §3).
type Cost struct {
	GPUHourUSD float64 `json:"gpu_hour_usd"`
	GPUs       int     `json:"gpus"`
	// GPUsFrom says where the count came from: "setup" (--gpus, the
	// simulator's profile) or "readings" (the GPUs nvidia-smi or DCGM read).
	GPUsFrom   string  `json:"gpus_from"`
	USDPerMTok float64 `json:"usd_per_mtok"`
}

// costOf is stage s's cost at usd per GPU-hour over gpus GPUs; nil with
// no price, no GPU count or no output token.
func costOf(s *Stage, usd float64, gpus int, from string) *Cost {
	if !(usd > 0) || gpus <= 0 || s.OutputTokens <= 0 || !(s.WallS > 0) {
		return nil
	}
	return &Cost{GPUHourUSD: usd, GPUs: gpus, GPUsFrom: from,
		USDPerMTok: float64(gpus) * usd * s.WallS / 3600 / float64(s.OutputTokens) * 1e6}
}

// Account (re)computes each stage's cost and physical bound from the
// setup as it now stands (a report's --gpus, --gpu-hour-price or
// --model-params may have changed it after the fold), and the warnings of
// figures the bound rules out.
func (r *Run) Account() {
	r.Warnings = slices.DeleteFunc(r.Warnings, func(w Warning) bool { return w.Check == "impossible" })
	for i := range r.Stages {
		s := &r.Stages[i]
		gpus, from, gpu := r.Setup.GPUs, "setup", r.Setup.GPU
		if s.GPU != nil && gpus == 0 {
			gpus, from = s.GPU.GPUs, "readings"
		}
		if s.GPU != nil && gpu == "" && len(s.GPU.Names) > 0 {
			gpu = s.GPU.Names[0]
		}
		s.Cost = costOf(s, r.Setup.GPUHourUSD, gpus, from)
		s.Bound = boundOf(s, r.Setup.Hardware, gpu, gpus)
		if w := boundWarning(s); w != nil {
			r.Warnings = append(r.Warnings, *w)
		}
	}
	if r.Warnings == nil {
		r.Warnings = []Warning{}
	}
}

// EnergyFigure is one stage's J per 1000 tokens or $/Mtok of A and of B,
// with whether the two may be set side by side.
type EnergyFigure struct {
	B     string  `json:"b"`
	Stage string  `json:"stage"`
	Name  string  `json:"name"` // "J per 1000 tokens" or "USD per Mtok"
	A     float64 `json:"a"`
	BV    float64 `json:"b_value"`
	// Ratio is B / A; 0 (absent) when the comparison is refused.
	Ratio float64 `json:"ratio,omitempty"`
	// Verdict is "comparable", "qualified: …" (a field that matters is
	// unknown) or "refused: …" (one differs), with the reason.
	Verdict string `json:"verdict"`
}

// energyLengthTolerance is how far two stages' mean input or output
// lengths may drift (a 10% relative difference) before their energy per
// token is no longer the same work: MLPerf Power's warning that J/token
// across batch sizes and lengths misleads.
const energyLengthTolerance = 0.10

// EnergyFairness says whether stage a of run ra and stage b of run rb may
// have their energy or cost per token compared: refused when the batch
// (mean requests in flight, or the most the servers ran where both
// report it), the mean input or output length, the GPU
// count or the precision differ; qualified when the GPU count or
// precision is unknown.
func EnergyFairness(ra *Run, a *Stage, rb *Run, b *Stage) string {
	var diff, unknown []string
	near := func(x, y float64) bool { return math.Abs(x-y) <= energyLengthTolerance*max(x, y) }
	mean := func(s *Stage, n int) float64 { return float64(n) / float64(max(1, s.OK)) }
	if !near(a.EffectiveConcurrency, b.EffectiveConcurrency) {
		diff = append(diff, fmt.Sprintf("batch (mean in flight %.1f vs %.1f)", a.EffectiveConcurrency, b.EffectiveConcurrency))
	} else if a.Server != nil && b.Server != nil && a.Server.MaxRunning > 0 && b.Server.MaxRunning > 0 && !near(a.Server.MaxRunning, b.Server.MaxRunning) {
		// The same load in flight, batched differently by the servers
		// (one caps its running requests and queues the rest).
		diff = append(diff, fmt.Sprintf("batch (the servers ran ≤ %.0f vs ≤ %.0f)", a.Server.MaxRunning, b.Server.MaxRunning))
	}
	if x, y := mean(a, a.PromptTokens), mean(b, b.PromptTokens); !near(x, y) {
		diff = append(diff, fmt.Sprintf("input length (%.0f vs %.0f tokens)", x, y))
	}
	if x, y := mean(a, a.OutputTokens), mean(b, b.OutputTokens); !near(x, y) {
		diff = append(diff, fmt.Sprintf("output length (%.0f vs %.0f tokens)", x, y))
	}
	ga, gb := stageGPUs(ra, a), stageGPUs(rb, b)
	switch {
	case ga == 0 || gb == 0:
		unknown = append(unknown, "GPU count")
	case ga != gb:
		diff = append(diff, fmt.Sprintf("GPU count (%d vs %d)", ga, gb))
	}
	pa, pb := precision(ra), precision(rb)
	switch {
	case pa == "" || pb == "":
		unknown = append(unknown, "precision")
	case pa != pb:
		diff = append(diff, fmt.Sprintf("precision (%s vs %s)", pa, pb))
	}
	if len(diff) > 0 {
		return "refused: different " + strings.Join(diff, ", ")
	}
	if len(unknown) > 0 {
		return "qualified: unknown " + strings.Join(unknown, ", ")
	}
	return "comparable"
}

// stageGPUs is the GPUs behind a stage: the setup's, else those read.
func stageGPUs(r *Run, s *Stage) int {
	if r.Setup.GPUs > 0 {
		return r.Setup.GPUs
	}
	if s.GPU != nil {
		return s.GPU.GPUs
	}
	return 0
}

// precision is the weights' precision: stated, else the model name's tag.
func precision(r *Run) string {
	if h := r.Setup.Hardware; h != nil && h.Precision != "" {
		return strings.ToLower(h.Precision)
	}
	if q := quantRe.FindString(r.Setup.Model); q != "" {
		return strings.ToLower(q)
	}
	return ""
}

// EnergyPair is the energy and cost figures of stage a against b, for
// each one both have.
func EnergyPair(ra *Run, a *Stage, rb *Run, b *Stage) []EnergyFigure {
	verdict := EnergyFairness(ra, a, rb, b)
	var out []EnergyFigure
	add := func(name string, x, y float64) {
		f := EnergyFigure{B: rb.File, Stage: Label(a.Stage), Name: name, A: x, BV: y, Verdict: verdict}
		if !strings.HasPrefix(verdict, "refused") {
			f.Ratio = y / x
		}
		out = append(out, f)
	}
	if a.GPU != nil && b.GPU != nil && a.GPU.JPer1000Tokens > 0 && b.GPU.JPer1000Tokens > 0 {
		add("J per 1000 tokens", a.GPU.JPer1000Tokens, b.GPU.JPer1000Tokens)
	}
	if a.Cost != nil && b.Cost != nil {
		add("USD per Mtok", a.Cost.USDPerMTok, b.Cost.USDPerMTok)
	}
	return out
}
