package analyze

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// boundCase is one generated deployment and stage: a GPU of the table, a
// model, a GPU count, a batch and a context.
type boundCase struct {
	spec  GPUSpec
	hw    record.Hardware
	gpus  int
	stage Stage
}

func genBoundCase(r *rand.Rand) boundCase {
	spec := gpuSpecs[r.IntN(len(gpuSpecs))]
	prec := []string{"bf16", "fp8", "int4"}[r.IntN(3)]
	hw := record.Hardware{ParamsB: 1 + 400*r.Float64(), Precision: prec}
	if r.IntN(2) == 0 {
		hw.ActiveParamsB = hw.ParamsB * (0.05 + 0.5*r.Float64()) // a mixture of experts
	}
	if r.IntN(2) == 0 {
		hw.KVBytesPerToken = float64(16384 * (1 + r.IntN(16)))
	}
	ok := 10 + r.IntN(500)
	s := Stage{Stage: summary.Stage{OK: ok, Requests: ok, EffectiveConcurrency: 0.5 + 256*r.Float64(),
		PromptTokens: ok * (1 + r.IntN(8000)), OutputTokens: ok * (1 + r.IntN(2000)), WallS: 1 + 100*r.Float64(), TokensPerChunk: 1}}
	s.Concurrency = int(math.Ceil(s.EffectiveConcurrency))
	return boundCase{spec: spec, hw: hw, gpus: 1 + r.IntN(8), stage: s}
}

// The decode bound equals the step-time roofline worked out another way:
// a replica of all the GPUs in tensor parallel reads its share of the
// weights and of every sequence's KV each step at the GPUs' bandwidth and
// gives each sequence one token a step; compute caps every token at 2
// FLOPs per active parameter. Over a generated family of GPUs, models
// (dense and MoE, three precisions), GPU counts, batches and contexts.
func TestDecodeBoundIsTheRoofline(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(41, 3))
	bytesOf := map[string]float64{"bf16": 2, "fp8": 1, "int4": 0.5}
	for i := range 500 {
		c := genBoundCase(r)
		b := boundOf(&c.stage, &c.hw, c.spec.Name, c.gpus)
		if b == nil {
			t.Fatalf("case %d: no bound for %+v on %d × %s", i, c.hw, c.gpus, c.spec.Name)
		}
		active := c.hw.ActiveParamsB
		if active == 0 {
			active = c.hw.ParamsB
		}
		batch := max(1, c.stage.EffectiveConcurrency)
		ctx := 0.0
		if c.hw.KVBytesPerToken > 0 {
			ctx = float64(c.stage.PromptTokens) / float64(c.stage.OK)
		}
		g := float64(c.gpus)
		perGPUBytes := (active*1e9*bytesOf[c.hw.Precision] + batch*ctx*c.hw.KVBytesPerToken) / g
		step := perGPUBytes / (c.spec.TBs * 1e12)
		memory := batch / step / g
		flops := c.spec.BF16
		switch {
		case c.hw.Precision == "fp8" || (c.hw.Precision == "int4" && c.spec.FP4 == 0):
			flops = c.spec.FP8
		case c.hw.Precision == "int4":
			flops = c.spec.FP4
		}
		compute := flops * 1e12 / (2 * active * 1e9)
		if want := min(memory, compute); math.Abs(b.DecodeTokS/want-1) > 1e-9 {
			t.Errorf("case %d (%+v, %d × %s, batch %.1f): decode bound %.3f, the roofline gives %.3f", i, c.hw, c.gpus, c.spec.Name, batch, b.DecodeTokS, want)
		}
		// One sequence alone: its replica reads the weights and its own KV.
		alone := (active*1e9*bytesOf[c.hw.Precision] + ctx*c.hw.KVBytesPerToken) / g / (c.spec.TBs * 1e12)
		if want := 1 / alone; math.Abs(b.RequestTokS/want-1) > 1e-9 {
			t.Errorf("case %d: one request's bound %.3f, want %.3f", i, b.RequestTokS, want)
		}
	}
}

// A stage a little above its bound is impossible and warned, with the
// bound and its inputs; a little below it is not.
func TestBoundFlagsOnlyWhatExceedsIt(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(41, 4))
	for i := range 300 {
		c := genBoundCase(r)
		c.stage.PromptTokens = 0 // so the compute bound is not what is crossed
		b := boundOf(&c.stage, &c.hw, c.spec.Name, c.gpus)
		above := r.IntN(2) == 0
		f := 0.97
		if above {
			f = 1.03
		}
		c.stage.AggregateTokS = f * b.DecodeTokS * float64(c.gpus)
		// Keep the other figures well within their bounds.
		c.stage.OutputTokens = int(c.stage.AggregateTokS * c.stage.WallS)
		c.stage.DecodeTokS = stats.Dist{N: 1, P50: 0.5 * b.RequestTokS}
		run := &Run{Setup: record.Setup{GPU: c.spec.Name, GPUs: c.gpus, Hardware: &c.hw}, Stages: []Stage{c.stage}}
		run.Account()
		run.Account() // twice: one warning, not two
		var warned []Warning
		for _, w := range run.Warnings {
			if w.Check == "impossible" {
				warned = append(warned, w)
			}
		}
		if above != (len(warned) == 1) || len(warned) > 1 {
			t.Fatalf("case %d: output at %.2f× the bound, warnings %v", i, f, run.Warnings)
		}
		if above && !strings.Contains(warned[0].Text, c.spec.Name) {
			t.Errorf("case %d: the warning names no GPU: %s", i, warned[0].Text)
		}
	}
}

// The server's own count and one request's speed are held to the bound
// too, and a prompt rate no compute could serve (a prefix cache the
// server does not report) is flagged.
func TestBoundFlagsEachFigure(t *testing.T) {
	t.Parallel()
	hw := &record.Hardware{ParamsB: 70, Precision: "bf16"}
	base := Stage{Stage: summary.Stage{Concurrency: 8, OK: 10, Requests: 10, EffectiveConcurrency: 8, WallS: 10, AggregateTokS: 10, OutputTokens: 100, PromptTokens: 1000}}
	b := boundOf(&base, hw, "H100 SXM", 1)
	gen := 2 * b.DecodeTokS
	for _, tc := range []struct {
		name, want string
		set        func(s *Stage)
	}{
		{"server count", "the server's generated", func(s *Stage) { s.Server = &ServerReading{GeneratedTokS: &gen} }},
		{"one request", "one request's decode", func(s *Stage) { s.DecodeTokS = stats.Dist{N: 10, P50: 2 * b.RequestTokS} }},
		{"server's timings", "by the server's timings", func(s *Stage) { s.ServerDecodeTokS = stats.Dist{N: 10, P50: 2 * b.RequestTokS} }},
		{"prompts", "by compute", func(s *Stage) { s.PromptTokens = int(2 * b.ComputeTokS * s.WallS) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := base
			tc.set(&s)
			got := boundOf(&s, hw, "H100 SXM", 1)
			if len(got.Over) != 1 || !strings.Contains(got.Over[0], tc.want) {
				t.Errorf("over %q, want one naming %q", got.Over, tc.want)
			}
		})
	}
	if s := base; len(boundOf(&s, hw, "H100 SXM", 1).Over) != 0 {
		t.Errorf("the plain stage is flagged")
	}
	// Speculative decoding gives a sequence several tokens a step: twice
	// the one-token bound is possible at an acceptance length of 3.
	spec := base
	spec.AggregateTokS = 2 * b.DecodeTokS
	spec.Server = &ServerReading{SpecLength: 3}
	if got := boundOf(&spec, hw, "H100 SXM", 1); got.StepTokens != 3 || len(got.Over) != 0 {
		t.Errorf("speculative: %v tokens a step, over %q", got.StepTokens, got.Over)
	}
	spec.Server = nil
	if got := boundOf(&spec, hw, "H100 SXM", 1); len(got.Over) != 1 {
		t.Errorf("twice the bound without speculation: over %q", got.Over)
	}
	// Another tool's file may state no mean in flight: its concurrency
	// stands in, and with neither there is no bound (batch 1 would flag
	// any busy server).
	foreign := base
	foreign.EffectiveConcurrency = 0
	if got := boundOf(&foreign, hw, "H100 SXM", 1); got == nil || got.Batch != 8 {
		t.Errorf("no mean in flight, C=%d: %+v", foreign.Concurrency, got)
	}
	foreign.Concurrency = 0
	if got := boundOf(&foreign, hw, "H100 SXM", 1); got != nil {
		t.Errorf("a bound with no batch known: %+v", got)
	}
	if boundOf(&base, hw, "a GPU no table lists", 1) != nil || boundOf(&base, &record.Hardware{ParamsB: 70, Precision: "q4_k_m"}, "H100", 1) != nil {
		t.Errorf("a bound from an unknown GPU or precision")
	}
}

// nvidia-smi's and DCGM's names find their table entry; GB200 is not a
// B200 and is not guessed.
func TestLookupGPU(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{"NVIDIA H100 80GB HBM3": "H100 SXM", "NVIDIA H100 PCIe": "H100 PCIe", "NVIDIA H200": "H200", "NVIDIA B200": "B200",
		"NVIDIA A100-SXM4-80GB": "A100 SXM", "NVIDIA L40S": "L40S", "NVIDIA RTX PRO 6000 Blackwell Server Edition": "RTX PRO 6000 Blackwell", "AMD Instinct MI300X": "MI300X", "NVIDIA GB200": ""} {
		g, _ := LookupGPU(name)
		if g.Name != want {
			t.Errorf("%q: %q, want %q", name, g.Name, want)
		}
	}
}

// $/Mtok is the GPUs' time at the price shared by the output tokens: a
// stage of 8 GPUs at $2/h for 90 s is $0.40, over 200,000 tokens $2 per
// million; the GPU count comes from the readings when the setup has none,
// and there is no cost without a price, a count or a token.
func TestCostPerMillionTokens(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(41, 5))
	for i := range 200 {
		gpus, price, wall, tokens := 1+r.IntN(16), 0.5+10*r.Float64(), 1+1000*r.Float64(), 1+r.IntN(1e7)
		dollars := float64(gpus) * price * wall / 3600
		s := Stage{Stage: summary.Stage{WallS: wall, OutputTokens: tokens, OK: 1, Requests: 1}}
		read := r.IntN(2) == 0
		run := &Run{Setup: record.Setup{GPUHourUSD: price, GPUs: gpus}, Stages: []Stage{s}}
		if read {
			run.Setup.GPUs = 0
			run.Stages[0].GPU = &GPUReading{GPUs: gpus, Names: []string{"x"}}
		}
		run.Account()
		c := run.Stages[0].Cost
		if c == nil || math.Abs(c.USDPerMTok/(dollars/(float64(tokens)/1e6))-1) > 1e-9 || c.GPUs != gpus || (c.GPUsFrom == "readings") != read {
			t.Fatalf("case %d: %+v; want $%.4f over %d tokens on %d GPUs", i, c, dollars, tokens, gpus)
		}
	}
	for _, run := range []*Run{
		{Setup: record.Setup{GPUs: 8}, Stages: []Stage{{Stage: summary.Stage{WallS: 1, OutputTokens: 1}}}},
		{Setup: record.Setup{GPUHourUSD: 2}, Stages: []Stage{{Stage: summary.Stage{WallS: 1, OutputTokens: 1}}}},
		{Setup: record.Setup{GPUHourUSD: 2, GPUs: 8}, Stages: []Stage{{Stage: summary.Stage{WallS: 1}}}},
	} {
		if run.Account(); run.Stages[0].Cost != nil {
			t.Errorf("a cost from %+v", run.Setup)
		}
	}
}

// J/token and $/Mtok of two runs are set side by side with a ratio only
// at the same batch, lengths, GPU count and precision (MLPerf Power's
// warning); each difference refuses the ratio and is named, an unknown
// GPU count or precision qualifies it.
func TestEnergyComparisonIsFair(t *testing.T) {
	t.Parallel()
	mk := func(edit func(r *Run)) *Run {
		r := &Run{File: "b.jsonl", Setup: record.Setup{GPUs: 2, GPUHourUSD: 3, Hardware: &record.Hardware{ParamsB: 8, Precision: "bf16"}},
			Stages: []Stage{{Stage: summary.Stage{Concurrency: 16, OK: 100, Requests: 100, EffectiveConcurrency: 15.5, PromptTokens: 100 * 512, OutputTokens: 100 * 256, WallS: 30},
				Server: &ServerReading{MaxRunning: 16},
				GPU:    &GPUReading{GPUs: 2, Names: []string{"H100"}, JPer1000Tokens: 400}}}}
		edit(r)
		r.Account()
		return r
	}
	a := mk(func(*Run) {})
	for _, tc := range []struct {
		name, want string
		edit       func(r *Run)
	}{
		{"same", "comparable", func(r *Run) { r.Stages[0].GPU.JPer1000Tokens = 300 }},
		{"lengths within 10%", "comparable", func(r *Run) { r.Stages[0].OutputTokens = 100 * 270 }},
		{"batch", "refused: different batch (mean in flight 15.5 vs 7.9)", func(r *Run) { r.Stages[0].EffectiveConcurrency = 7.9 }},
		{"server batch", "refused: different batch (the servers ran ≤ 16 vs ≤ 4)", func(r *Run) {
			r.Stages[0].Server = &ServerReading{MaxRunning: 4}
		}},
		{"input", "refused: different input length (512 vs 2048 tokens)", func(r *Run) { r.Stages[0].PromptTokens = 100 * 2048 }},
		{"output", "refused: different output length (256 vs 1024 tokens)", func(r *Run) { r.Stages[0].OutputTokens = 100 * 1024 }},
		{"GPU count", "refused: different GPU count (2 vs 4)", func(r *Run) { r.Setup.GPUs = 4 }},
		{"precision", "refused: different precision (bf16 vs fp8)", func(r *Run) { r.Setup.Hardware = &record.Hardware{ParamsB: 8, Precision: "fp8"} }},
		{"precision from the name", "refused: different precision (bf16 vs fp8)", func(r *Run) { r.Setup.Hardware, r.Setup.Model = nil, "Llama-3.1-8B-FP8" }},
		{"precision unknown", "qualified: unknown precision", func(r *Run) { r.Setup.Hardware = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := mk(tc.edit)
			figs := EnergyPair(a, &a.Stages[0], b, &b.Stages[0])
			if len(figs) != 2 {
				t.Fatalf("%d figures, want J per 1000 tokens and USD per Mtok: %+v", len(figs), figs)
			}
			for _, f := range figs {
				if f.Verdict != tc.want {
					t.Errorf("%s: %q, want %q", f.Name, f.Verdict, tc.want)
				}
				refused := strings.HasPrefix(tc.want, "refused")
				if want := f.BV / f.A; (refused && f.Ratio != 0) || (!refused && math.Abs(f.Ratio/want-1) > 1e-12) {
					t.Errorf("%s: ratio %v (refused: %v)", f.Name, f.Ratio, refused)
				}
			}
		})
	}
}

// An experiment's cells set their energy and cost beside the base's: a
// configuration of the same work gets its ratio, one whose requests were
// four times as long is refused, naming the output length.
func TestExperimentEnergyAgainstTheBase(t *testing.T) {
	t.Parallel()
	mk := func(seed uint64, out int) *Run {
		r := runOf([]int{8}, []float64{50}, seed)
		r.Setup.GPUHourUSD, r.Setup.Hardware = 2, &record.Hardware{ParamsB: 8, Precision: "fp8"}
		s := &r.Stages[0]
		s.OutputTokens, s.PromptTokens, s.EffectiveConcurrency, s.WallS = out*s.OK, 256*s.OK, 7.9, 40
		s.GPU = &GPUReading{GPUs: 8, Names: []string{"H100"}, JPer1000Tokens: 500 + float64(out)}
		r.Account()
		return r
	}
	e := &Experiment{Configs: []ExperimentConfig{{Name: "a", OK: true, Run: mk(1, 100)}, {Name: "same", OK: true, Run: mk(2, 100)}, {Name: "long", OK: true, Run: mk(3, 400)}}}
	e.CompareConfigs([]int{8})
	cells := e.Levels[0].Cells
	if len(cells[0].Energy) != 0 || len(cells[1].Energy) != 2 || len(cells[2].Energy) != 2 {
		t.Fatalf("energy per cell: %d %d %d, want none for the base, J and $ for the others", len(cells[0].Energy), len(cells[1].Energy), len(cells[2].Energy))
	}
	for _, f := range cells[1].Energy {
		if f.Verdict != "comparable" || math.Abs(f.Ratio-f.BV/f.A) > 1e-12 {
			t.Errorf("same work: %+v", f)
		}
	}
	for _, f := range cells[2].Energy {
		if f.Verdict != "refused: different output length (100 vs 400 tokens)" || f.Ratio != 0 {
			t.Errorf("four times the output: %+v", f)
		}
	}
}
