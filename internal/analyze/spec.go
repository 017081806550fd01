package analyze

import (
	"fmt"
	"math"
	"strings"
)

// Speculation explains speculative decoding between a run without it
// (Base) and one with it (Spec), at each level both measured
// (docs/METRICS.md §4): the tokens a verify step yields (the acceptance
// length), the speed-up that would give if a verify step cost what a plain
// decode step does, what a verify step cost, and the speed-up measured.
// By construction measured = expected / step cost, so "85% acceptance, 5%
// faster" reads as the acceptance's 3.6× eaten by a verify step that cost
// 3.4× a plain one.
type Speculation struct {
	Base   string      `json:"base"` // the file without speculative decoding
	Spec   string      `json:"spec"`
	Levels []SpecLevel `json:"levels"`
}

// SpecLevel is the explanation at one level.
type SpecLevel struct {
	Label string `json:"label"`
	// TokensPerStep is the acceptance length L: the mean tokens a request
	// gains per verify step, from the server's counters where it exposes
	// them (Source "server counters"), else from the stream: decode tokens
	// per decode chunk (ICL / ITL), one chunk being one verify step.
	TokensPerStep float64 `json:"tokens_per_step"`
	Source        string  `json:"tokens_per_step_source"`
	// ChunkTokens is decode tokens per decode chunk, beside the counters'.
	ChunkTokens float64 `json:"tokens_per_chunk"`
	// AcceptRate is accepted / drafted tokens, where the server counts
	// both (vLLM); 0 where it does not.
	AcceptRate float64 `json:"accept_rate,omitempty"`
	// StepMs is a verify step's time, ITL × L, and BaseStepMs a plain
	// decode step's, the base run's ITL (one token a step); StepCost is
	// their ratio.
	StepMs     float64 `json:"step_ms"`
	BaseStepMs float64 `json:"base_step_ms"`
	StepCost   float64 `json:"step_cost"`
	// Expected is the decode speed-up the acceptance gives if a verify
	// step cost a plain one (= L); Measured the base ITL over the spec
	// run's: the decode speed-up seen.
	Expected float64 `json:"expected_speedup"`
	Measured float64 `json:"measured_speedup"`
	// AggregateRatio is the spec run's aggregate tok/s over the base's:
	// prefill, queueing and the drain included.
	AggregateRatio float64 `json:"aggregate_ratio"`
	Text           string  `json:"text"`
}

// Speculative reports whether a run used speculative decoding, as its
// server says: its server info (SGLang's speculative_algorithm) or its
// counters of verify steps (vLLM's drafts, SGLang's acceptance length).
// Several tokens a chunk alone do not tell: a server that packs a fixed
// number of steps into a chunk (stream_interval), or writes several
// chunks at once, shows them too.
func Speculative(r *Run) bool {
	if a, ok := r.Setup.Server.Info["speculative_algorithm"].(string); ok && a != "" && !strings.EqualFold(a, "none") {
		return true
	}
	for i := range r.Stages {
		if s := r.Stages[i].Server; s != nil && s.SpecLength > 0 {
			return true
		}
	}
	return false
}

// chunkTokens is a stage's decode tokens per decode chunk: Σ gaps / gaps
// over Σ gaps / decode tokens (ICL and ITL are those means); 0 when
// either is missing.
func chunkTokens(s *Stage) float64 {
	if s.ICL.N == 0 || s.ITL.N == 0 || !(s.ITL.Mean > 0) || math.IsNaN(s.ICL.Mean) {
		return 0
	}
	return s.ICL.Mean / s.ITL.Mean
}

// ExplainSpeculation explains spec against base at every closed-loop level
// both measured; nil when they share none with decode figures.
func ExplainSpeculation(base, spec *Run) *Speculation {
	x := &Speculation{Base: base.File, Spec: spec.File}
	for i := range spec.Stages {
		s := &spec.Stages[i]
		b := levelStage(base, s.Concurrency, s.Rate, s.Repeat)
		if b == nil || s.ITL.N == 0 || b.ITL.N == 0 || !(s.ITL.Mean > 0) || !(b.ITL.Mean > 0) {
			continue
		}
		x.Levels = append(x.Levels, specLevel(b, s))
	}
	if len(x.Levels) == 0 {
		return nil
	}
	return x
}

// levelStage is run's stage at a level and repeat, or nil.
func levelStage(r *Run, c int, rate float64, repeat int) *Stage {
	for i := range r.Stages {
		s := &r.Stages[i]
		if s.Concurrency == c && s.Rate == rate && s.Repeat == repeat {
			return s
		}
	}
	return nil
}

// SpecAlone is speculative decoding as one stage shows it without a run
// to set it against: tokens per verify step (the counters', else the
// chunks') and a verify step's time; ok false without decode figures.
func SpecAlone(s *Stage) (SpecLevel, bool) {
	l := SpecLevel{Label: Label(s.Stage), ChunkTokens: chunkTokens(s), TokensPerStep: chunkTokens(s), Source: "tokens per chunk"}
	if r := s.Server; r != nil && r.SpecLength > 0 {
		l.TokensPerStep, l.Source, l.AcceptRate = r.SpecLength, "server counters", r.SpecRate
	}
	l.StepMs = s.ITL.Mean * l.TokensPerStep
	return l, l.TokensPerStep > 0 && l.StepMs > 0
}

func specLevel(b, s *Stage) SpecLevel {
	l, _ := SpecAlone(s)
	l.BaseStepMs = b.ITL.Mean
	l.StepCost = l.StepMs / l.BaseStepMs
	l.Expected, l.Measured = l.TokensPerStep, b.ITL.Mean/s.ITL.Mean
	if b.AggregateTokS > 0 {
		l.AggregateRatio = s.AggregateTokS / b.AggregateTokS
	}
	l.Text = l.explain()
	return l
}

// explain says where the acceptance's speed-up went.
func (l SpecLevel) explain() string {
	acc := fmt.Sprintf("%.2f tokens per verify step (%s", l.TokensPerStep, l.Source)
	if l.AcceptRate > 0 {
		acc += fmt.Sprintf(", %.0f%% of drafted tokens accepted", 100*l.AcceptRate)
	}
	acc += ")"
	lost := fmt.Sprintf("a verify step took %.2f ms against a plain step's %.2f ms (%.2f×: the draft, and the check of every drafted token of every request in the batch)", l.StepMs, l.BaseStepMs, l.StepCost)
	verdict := fmt.Sprintf("decode %.2f× as fast", l.Measured)
	switch {
	case l.Measured < 0.995:
		verdict = fmt.Sprintf("decode %.0f%% slower (%.2f×)", 100*(1-l.Measured), l.Measured)
	case l.Measured > 1.005:
		verdict = fmt.Sprintf("decode %.0f%% faster (%.2f×)", 100*(l.Measured-1), l.Measured)
	}
	return fmt.Sprintf("%s: %s would make decode %.2f× as fast if a verify step cost a plain one; %s, so %s; aggregate tok/s %.2f×",
		l.Label, acc, l.Expected, lost, verdict, l.AggregateRatio)
}

// pairSpeculation explains speculative decoding between a and b when
// exactly one of them used it; nil otherwise.
func pairSpeculation(a, b *Run) *Speculation {
	switch sa, sb := Speculative(a), Speculative(b); {
	case sa && !sb:
		return ExplainSpeculation(b, a)
	case sb && !sa:
		return ExplainSpeculation(a, b)
	}
	return nil
}
