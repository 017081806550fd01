package analyze

import (
	"fmt"
	"strings"

	"github.com/tokperf/tokperf/internal/record"
)

// Bound is the most a stage's GPUs could physically deliver (the
// roofline, at the GPUs' published peaks), with every input it rests on,
// so a figure above it is known to be a miscount, a cache or a clock
// (METRICS.md §5).
type Bound struct {
	GPU           string  `json:"gpu"` // the table's entry
	GPUs          int     `json:"gpus"`
	TBs           float64 `json:"hbm_tb_s"`
	TFLOPS        float64 `json:"tflops"`
	ParamsB       float64 `json:"params_b"` // read per step: the active ones
	BytesPerParam float64 `json:"bytes_per_param"`
	// Batch is the mean requests in flight (effective concurrency): the
	// bound is concave in the batch, so the mean's bound is at least the
	// mean of the bounds.
	Batch float64 `json:"batch"`
	// ContextTokens is the mean prompt per request, the KV each running
	// sequence reads at least per step (0 with no KV size stated).
	ContextTokens   float64 `json:"context_tokens,omitempty"`
	KVBytesPerToken float64 `json:"kv_bytes_per_token,omitempty"`
	// StepTokens is the tokens one step can give a sequence: 1, or the
	// speculative acceptance (the server's, else the tokens per chunk).
	StepTokens float64 `json:"step_tokens"`
	// DecodeTokS is the bound on output tok/s per GPU at this batch:
	// min(memory: StepTokens·Batch·BW / (W + Batch·context·KV), compute:
	// FLOPS / (2·active params)); weights split over the GPUs (tensor
	// parallel), the loosest way to place them.
	DecodeTokS float64 `json:"decode_tok_s_per_gpu"`
	// RequestTokS bounds one request's decode tok/s: StepTokens · GPUs ·
	// BW / (W + context·KV).
	RequestTokS float64 `json:"request_tok_s"`
	// ComputeTokS bounds the tokens computed per GPU per second, prompt
	// tokens not served from a cache and output tokens together: FLOPS /
	// (2·active params).
	ComputeTokS float64 `json:"compute_tok_s_per_gpu"`
	// from says where the model's size came from, when not from the user.
	from string
	// Over are the figures above the bound, each with its bound; empty:
	// every figure is possible.
	Over []string `json:"impossible,omitempty"`
}

// boundOf is the bound of stage s on hw's model over gpus GPUs of type
// gpu; nil when the GPU, the model's size or its precision is unknown.
func boundOf(s *Stage, hw *record.Hardware, gpu string, gpus int) *Bound {
	spec, ok := LookupGPU(gpu)
	if hw == nil || !ok || gpus <= 0 {
		return nil
	}
	bpp, ok := PrecisionBytes(hw.Precision)
	if !ok && hw.BytesPerParam > 0 {
		bpp, ok = hw.BytesPerParam, true // the server's file size says it
	}
	params := hw.ActiveParamsB
	if params <= 0 {
		params = hw.ParamsB
	}
	if !ok || params <= 0 {
		return nil
	}
	batch := s.EffectiveConcurrency
	if !(batch > 0) {
		batch = float64(s.Concurrency) // another tool's file may state no mean in flight
	}
	if !(batch > 0) {
		return nil // no batch: any bound would be a guess
	}
	b := &Bound{GPU: spec.Name, GPUs: gpus, TBs: spec.TBs, TFLOPS: spec.TFLOPS(bpp), ParamsB: params, BytesPerParam: bpp,
		Batch: max(1, batch), StepTokens: 1, KVBytesPerToken: hw.KVBytesPerToken}
	if hw.From != "" {
		b.from = "; the model's size from " + hw.From
	}
	if hw.KVBytesPerToken > 0 && s.OK > 0 {
		b.ContextTokens = float64(s.PromptTokens) / float64(s.OK)
	}
	if s.Server != nil && s.Server.SpecLength > 1 {
		b.StepTokens = s.Server.SpecLength
	} else if s.TokensPerChunk > 1 {
		b.StepTokens = s.TokensPerChunk // a chunk may be several steps: looser, never tighter
	}
	w, bw := params*1e9*bpp, spec.TBs*1e12
	kv := b.ContextTokens * b.KVBytesPerToken
	b.ComputeTokS = spec.TFLOPS(bpp) * 1e12 / (2 * params * 1e9)
	b.DecodeTokS = min(b.StepTokens*b.Batch*bw/(w+b.Batch*kv), b.ComputeTokS)
	b.RequestTokS = b.StepTokens * float64(gpus) * bw / (w + kv)
	b.Over = b.over(s)
	return b
}

// over lists the stage's figures that the bound rules out.
func (b *Bound) over(s *Stage) []string {
	var out []string
	g := float64(b.GPUs)
	if v := s.AggregateTokS / g; v > b.DecodeTokS {
		out = append(out, fmt.Sprintf("output %.1f tok/s per GPU > %.1f", v, b.DecodeTokS))
	}
	if s.Server != nil && s.Server.GeneratedTokS != nil {
		if v := *s.Server.GeneratedTokS / g; v > b.DecodeTokS {
			out = append(out, fmt.Sprintf("the server's generated %.1f tok/s per GPU > %.1f", v, b.DecodeTokS))
		}
	}
	if s.DecodeTokS.N > 0 && s.DecodeTokS.P50 > b.RequestTokS {
		out = append(out, fmt.Sprintf("one request's decode %.1f tok/s (p50) > %.1f", s.DecodeTokS.P50, b.RequestTokS))
	}
	if d := s.ServerDecodeTokS; d.N > 0 && d.P50 > b.RequestTokS {
		out = append(out, fmt.Sprintf("one request's decode by the server's timings %.1f tok/s (p50) > %.1f", d.P50, b.RequestTokS))
	}
	if s.WallS > 0 {
		computed := float64(s.PromptTokens-s.CachedTokens+s.OutputTokens) / s.WallS / g
		if computed > b.ComputeTokS {
			out = append(out, fmt.Sprintf("prompt (uncached) and output %.1f tok/s per GPU > %.1f by compute", computed, b.ComputeTokS))
		}
	}
	return out
}

// Inputs is the bound's arithmetic in words, for every format.
func (b *Bound) Inputs() string {
	kv := "KV reads left out (no kv size stated)"
	if b.KVBytesPerToken > 0 {
		kv = fmt.Sprintf("KV %.0f B/token × %.0f tokens of context", b.KVBytesPerToken, b.ContextTokens)
	}
	return fmt.Sprintf("%d × %s (%.2f TB/s, %.0f TFLOPS), %.4g B active params × %.2g bytes, batch %.1f, %.3g tokens a step per sequence, %s",
		b.GPUs, b.GPU, b.TBs, b.TFLOPS, b.ParamsB, b.BytesPerParam, b.Batch, b.StepTokens, kv) + b.from
}

// boundWarning is the stage's "impossible" warning, or nil.
func boundWarning(s *Stage) *Warning {
	if s.Bound == nil || len(s.Bound.Over) == 0 {
		return nil
	}
	return &Warning{Stage: Label(s.Stage), Check: "impossible", Text: fmt.Sprintf("impossible on the stated hardware (a miscount, a cache or a clock): %s; bound: decode %.1f tok/s per GPU, one request %.1f tok/s, compute %.1f tok/s per GPU, from %s",
		strings.Join(s.Bound.Over, "; "), s.Bound.DecodeTokS, s.Bound.RequestTokS, s.Bound.ComputeTokS, s.Bound.Inputs())}
}
