package sim

import (
	"math"
	"strings"
	"time"
)

// StepTime is the time of one engine step that verifies q tokens for each of
// batch running requests holding kvTokens tokens of context in all
// (docs/SIMULATOR.md, "Performance model"). q is 1 without speculation.
func (p *Profile) StepTime(batch, q, kvTokens int) time.Duration {
	if batch <= 0 {
		return 0
	}
	d := p.Decode
	var ms float64
	switch {
	case len(d.Table) > 0:
		ms = interpolate(d.Table, float64(batch*q))
	case d.Linear != nil:
		ms = d.Linear.AMs + d.Linear.CMs*float64(batch*q)
	default:
		ms = d.Roofline.stepMs(batch, q, kvTokens, p.GPUs)
	}
	ms += d.FixedMs
	if p.Spec != nil && q > 1 {
		ms += p.Spec.DraftMs
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// interpolate is piecewise linear through the table, extended along the
// first and last segments (a flat line for a one-point table).
func interpolate(t []StepPoint, x float64) float64 {
	if len(t) == 1 {
		return t[0].StepMs
	}
	i := 1
	for i < len(t)-1 && x > float64(t[i].Batch) {
		i++
	}
	a, b := t[i-1], t[i]
	slope := (b.StepMs - a.StepMs) / float64(b.Batch-a.Batch)
	v := a.StepMs + slope*(x-float64(a.Batch))
	if v < t[0].StepMs*0.5 {
		v = t[0].StepMs * 0.5
	}
	return v
}

// stepMs is t_fixed + max(t_mem, t_cmp) + t_comm.
func (r *Roofline) stepMs(batch, q, kvTokens, gpus int) float64 {
	g := float64(gpus)
	weights := r.WeightsGB * 1e9
	if m := r.MoE; m != nil {
		n := float64(batch * q)
		touched := float64(m.Experts) * (1 - math.Pow(1-float64(m.TopK)/float64(m.Experts), n))
		weights += float64(m.Layers) * touched * m.ExpertMB * 1e6
	}
	mem := (weights + r.KVBytesPerTok*float64(kvTokens)) / (r.EffBandwidth * r.BandwidthGBs * 1e9 * g)
	cmp := 2 * r.ActiveParamsB * 1e9 * float64(batch*q) / (r.EffFLOPS * r.TFLOPS * 1e12 * g)
	comm := 0.0
	if gpus > 1 && r.Layers > 0 {
		link := r.LinkGBs * 1e9
		if link == 0 {
			link = 64e9
		}
		comm = float64(r.Layers) * 2 * (r.AllreduceUs*1e-6 + float64(batch*q*r.DModel*2)/link)
	}
	return (math.Max(mem, cmp) + comm) * 1e3
}

// PrefillTime is the cost of computing n prompt tokens in one step.
func (p *Profile) PrefillTime(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	perTok := p.Prefill.PerTokenUs * 1e-6
	if perTok == 0 {
		r := p.Decode.Roofline
		perTok = 2 * r.ActiveParamsB * 1e9 / (r.EffFLOPS * r.TFLOPS * 1e12 * float64(p.GPUs))
	}
	return time.Duration((p.Prefill.FixedMs*1e-3 + perTok*float64(n)) * float64(time.Second))
}

// TokensPerStep is the mean tokens a request gains per verify step:
// (1 − α^(k+1)) / (1 − α), or 1 without speculation.
func (p *Profile) TokensPerStep() float64 {
	s := p.Spec
	if s == nil {
		return 1
	}
	if s.Acceptance == 0 {
		return 1
	}
	return (1 - math.Pow(s.Acceptance, float64(s.Drafts+1))) / (1 - s.Acceptance)
}

// verifyWidth is q, the tokens verified per request per step.
func (p *Profile) verifyWidth() int {
	if p.Spec == nil {
		return 1
	}
	return p.Spec.Drafts + 1
}

// AcceptanceFor is the acceptance of a prompt of repetition r (0: varied,
// 1: it only repeats itself): Acceptance, towards AcceptanceRepetitive.
func (s *Spec) AcceptanceFor(r float64) float64 {
	if s.AcceptanceRepetitive == 0 {
		return s.Acceptance
	}
	return s.Acceptance + (s.AcceptanceRepetitive-s.Acceptance)*min(max(r, 0), 1)
}

// Repetition is the share of a text's word pairs that came earlier in it:
// 0 when no pair repeats (varied prose), near 1 for a text that loops.
// Words are compared as written, case and punctuation included.
func Repetition(text string) float64 {
	words := strings.Fields(text)
	if len(words) < 3 {
		return 0
	}
	seen := make(map[[2]string]bool, len(words))
	again := 0
	for i := 1; i < len(words); i++ {
		p := [2]string{words[i-1], words[i]}
		if seen[p] {
			again++
		}
		seen[p] = true
	}
	return float64(again) / float64(len(words)-1)
}
