package analyze

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/tokperf/tokperf/internal/baseline"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/summary"
)

// Side is what is known of one side of a comparison, a run or a baseline.
// An empty string or zero is unknown.
type Side struct {
	Name         string `json:"name"`
	Model        string `json:"model,omitempty"`
	Quantization string `json:"quantization,omitempty"`
	GPU          string `json:"gpu,omitempty"`
	GPUs         int    `json:"gpus,omitempty"`
	Engine       string `json:"engine,omitempty"`
	Speculative  string `json:"speculative,omitempty"`
	Endpoint     string `json:"endpoint,omitempty"`
	InputTokens  int    `json:"input_tokens,omitempty"`
	OutputTokens int    `json:"output_tokens,omitempty"`
	Levels       []int  `json:"levels,omitempty"`
	// Device is "GPU" or "CPU" where known: the difference between two
	// setups that matters most.
	Device string `json:"device,omitempty"`
	// Input and Output are the length distributions when not fixed ("dataset",
	// "100-300"): then InputTokens and OutputTokens are not what was asked.
	Input  string `json:"input,omitempty"`
	Output string `json:"output,omitempty"`
	// Prompts is where a run's prompts came from (the fixed word list, a
	// dataset, …); empty for a baseline, which states none.
	Prompts string `json:"prompts,omitempty"`
}

// CPU is the GPU type that says a server ran on the CPU (--gpu-type cpu):
// no GPU, so both GPU rows are known.
const CPU = "cpu"

// device is what a side's GPU fields say it ran on.
func device(gpu string, gpus int) string {
	switch {
	case strings.EqualFold(gpu, CPU):
		return "CPU"
	case gpu != "" || gpus > 0:
		return "GPU"
	}
	return ""
}

var quantRe = regexp.MustCompile(`(?i)(nvfp4|mxfp4|fp8|fp4|int8|int4|awq|gptq|bf16|fp16|gguf)`)

// RunSide describes a tokperf run from its setup; gpus and gpu override
// what the setup knows.
func RunSide(name string, s record.Setup, gpus int, gpu string) Side {
	side := Side{Name: name, Model: s.Model, Engine: s.Server.Engine, GPUs: s.GPUs, GPU: s.GPU,
		InputTokens: s.Workload.InputTokens, OutputTokens: s.Workload.OutputTokens, Levels: s.Load.Concurrency}
	if gpus > 0 {
		side.GPUs = gpus
	}
	if gpu != "" {
		side.GPU = gpu
	}
	if q := quantRe.FindString(s.Model); q != "" {
		side.Quantization = strings.ToLower(q)
	}
	side.Device = device(side.GPU, side.GPUs)
	// A dataset's or a distribution's lengths are not the fixed default
	// the header's numbers hold.
	side.Input, side.Output = s.Workload.Input, s.Workload.Output
	if side.Input != "" {
		side.InputTokens = 0
	}
	if side.Output != "" {
		side.OutputTokens = 0
	}
	side.Prompts = s.Workload.Prompts
	if side.Prompts == "" {
		side.Prompts = "the fixed word list"
	}
	switch s.Endpoint {
	case "generate", "completions":
		side.Endpoint = "raw generation endpoint"
	case "chat", "api-chat", "responses", "messages":
		side.Endpoint = "chat API"
	}
	if s.Server.Info != nil {
		if v, ok := s.Server.Info["speculative_algorithm"]; ok {
			side.Speculative = "none"
			if a, ok := v.(string); ok && a != "" {
				side.Speculative = strings.ToLower(a)
			}
		}
	}
	return side
}

// BaselineSide describes a published baseline.
func BaselineSide(b *baseline.Baseline) Side {
	side := Side{Name: b.Name, Model: b.Model, Quantization: b.Quantization, GPU: b.GPU, GPUs: b.GPUs,
		Engine: b.Engine, Speculative: b.Speculative, Endpoint: b.Endpoint, InputTokens: b.InputTokens, OutputTokens: b.OutputTokens}
	if side.OutputTokens == 0 {
		side.OutputTokens = b.OutputTokensMax
	}
	if e := strings.Fields(side.Engine); len(e) > 0 {
		side.Engine = strings.Trim(strings.ToLower(e[0]), ",")
	}
	for _, p := range b.Points {
		side.Levels = append(side.Levels, p.Concurrency)
	}
	side.Device = device(side.GPU, side.GPUs)
	return side
}

// Field is one setup field of both sides and whether it matches.
type Field struct {
	Name    string `json:"name"`
	A       string `json:"a"`
	B       string `json:"b"`
	Verdict string `json:"verdict"` // same, different, unknown, shared: …
}

// Fairness lists the setup fields and ends with "comparable" when every one
// is known and the same, "context only" otherwise (METRICS.md §4).
func Fairness(a, b Side) ([]Field, string) {
	// A model named with its quantization ("…-NVFP4") is the same base
	// model as one named without: the quantization row then says what the
	// name told, not "different model".
	baseA, quantA := baseModel(a.Model, a.Quantization)
	baseB, quantB := baseModel(b.Model, b.Quantization)
	a.Quantization, b.Quantization = quantA, quantB
	num := func(n int) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	speculative := func(s string) string {
		if s == "" {
			return ""
		}
		if strings.HasPrefix(s, "none") {
			return "none"
		}
		return s
	}
	// A length is its distribution's name where not fixed; on a CPU both
	// GPU rows are known: none.
	length := func(n int, dist string) string { return cmp.Or(dist, num(n)) }
	gpuType := func(s Side) string {
		if s.Device == "CPU" {
			return "none (CPU)"
		}
		return s.GPU
	}
	gpuCount := func(s Side) string {
		if s.Device == "CPU" {
			return "0"
		}
		return num(s.GPUs)
	}
	type row struct{ name, a, b string }
	var rows []row
	if a.Device != "" && b.Device != "" {
		rows = append(rows, row{"device", a.Device, b.Device})
	}
	rows = append(rows, []row{
		{"model", a.Model, b.Model},
		{"quantization", a.Quantization, b.Quantization},
		{"GPU type", gpuType(a), gpuType(b)},
		{"GPU count", gpuCount(a), gpuCount(b)},
		{"engine", a.Engine, b.Engine},
		{"input tokens", length(a.InputTokens, a.Input), length(b.InputTokens, b.Input)},
		{"output tokens", length(a.OutputTokens, a.Output), length(b.OutputTokens, b.Output)},
		{"speculative decoding", speculative(a.Speculative), speculative(b.Speculative)},
		{"endpoint", a.Endpoint, b.Endpoint},
		{"concurrency", levels(a.Levels), levels(b.Levels)},
	}...)
	if a.Prompts != "" && b.Prompts != "" {
		// Two runs: the same lengths from other prompts are not the same
		// workload (a baseline states none, so it has no such row).
		rows = append(rows, row{"prompts", a.Prompts, b.Prompts})
	}
	var fields []Field
	var diff, unknown []string
	for _, r := range rows {
		f := Field{Name: r.name, A: r.a, B: r.b}
		switch {
		case r.a == "" || r.b == "":
			f.Verdict = "unknown"
			unknown = append(unknown, r.name)
		case r.name == "concurrency":
			f.Verdict = "same"
			if shared(a.Levels, b.Levels) == nil {
				f.Verdict = "different"
				diff = append(diff, r.name)
			} else if r.a != r.b {
				f.Verdict = "shared: " + levels(shared(a.Levels, b.Levels))
			}
		case r.name == "model" && baseline.Normalize(baseA) == baseline.Normalize(baseB):
			f.Verdict = "same" // the base model; quantization is its own row
		case baseline.Normalize(r.a) == baseline.Normalize(r.b):
			f.Verdict = "same"
		default:
			f.Verdict = "different"
			diff = append(diff, r.name)
		}
		fields = append(fields, f)
	}
	if len(diff) == 0 && len(unknown) == 0 {
		return fields, "comparable"
	}
	var why []string
	if len(diff) > 0 {
		why = append(why, "different: "+strings.Join(diff, ", "))
	}
	if len(unknown) > 0 {
		why = append(why, "unknown: "+strings.Join(unknown, ", "))
	}
	return fields, "context only (" + strings.Join(why, "; ") + ")"
}

// quantTags are the quantization suffixes model names carry.
var quantTags = []string{"nvfp4", "mxfp4", "fp8", "fp4", "int8", "int4", "w8a8", "w4a16", "awq", "gptq", "bf16", "fp16", "gguf"}

// baseModel is a model name without a trailing quantization tag, and the
// quantization (the one stated, else the tag's, marked as from the name).
func baseModel(model, quant string) (string, string) {
	for _, sep := range []string{"-", "_", "."} {
		i := strings.LastIndex(model, sep)
		if i <= 0 {
			continue
		}
		tag := strings.ToLower(model[i+1:])
		if slices.Contains(quantTags, tag) {
			if quant == "" {
				quant = tag + " (from the model's name)"
			}
			return model[:i], quant
		}
	}
	return model, quant
}

func levels(cs []int) string {
	var s []string
	for _, c := range cs {
		s = append(s, strconv.Itoa(c))
	}
	return strings.Join(s, ",")
}

func shared(a, b []int) []int {
	var out []int
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

// Ratio is a run's aggregate against a baseline's at one concurrency.
type Ratio struct {
	C        int     `json:"concurrency"`
	Run      float64 `json:"run_tok_s"` // aggregate tok/s
	Base     float64 `json:"baseline_tok_s"`
	Ratio    float64 `json:"ratio"`
	PerGPU   bool    `json:"per_gpu"` // both GPU counts known and different
	RunGPU   float64 `json:"run_tok_s_per_gpu,omitempty"`
	BaseGPU  float64 `json:"baseline_tok_s_per_gpu,omitempty"`
	GPURatio float64 `json:"per_gpu_ratio,omitempty"`
}

// AgainstBaseline compares a run's closed-loop stages with a baseline at
// every concurrency both have.
func AgainstBaseline(stages []summary.Stage, run Side, b *baseline.Baseline) []Ratio {
	var out []Ratio
	for _, s := range stages {
		p := b.Point(s.Concurrency)
		if p == nil || s.Rate > 0 || s.OK == 0 {
			continue
		}
		r := Ratio{C: s.Concurrency, Run: s.AggregateTokS, Base: p.AggregateTokS}
		if b.PerGPU && b.GPUs > 0 {
			r.Base = p.AggregateTokS * float64(b.GPUs) // the source divided already
		}
		r.Ratio = r.Run / r.Base
		if run.GPUs > 0 && b.GPUs > 0 && (run.GPUs != b.GPUs || b.PerGPU) {
			r.PerGPU = true
			r.RunGPU, r.BaseGPU = r.Run/float64(run.GPUs), r.Base/float64(b.GPUs)
			r.GPURatio = r.RunGPU / r.BaseGPU
		}
		out = append(out, r)
	}
	return out
}

var claimRe = regexp.MustCompile(`^\s*([0-9]*\.?[0-9]+)\s*(x|×|times)?\s*$`)

// Claim checks a ratio someone stated in words ("3x") against the one
// measured at the highest shared concurrency.
func Claim(claim string, rs []Ratio) (string, error) {
	m := claimRe.FindStringSubmatch(strings.ToLower(claim))
	if m == nil {
		return "", fmt.Errorf("--claim %q: want a ratio such as 3x or 1.5", claim)
	}
	if len(rs) == 0 {
		return "", fmt.Errorf("--claim: no concurrency level is shared with the baseline")
	}
	want, _ := strconv.ParseFloat(m[1], 64)
	r := rs[len(rs)-1]
	f1 := func(x float64) float64 { return math.Round(x*10) / 10 }
	facts := fmt.Sprintf("%.1f / %.1f = %.2f× aggregate at C=%d", f1(r.Run), f1(r.Base), r.Ratio, r.C)
	if r.PerGPU {
		facts += fmt.Sprintf(", and %.1f / %.1f = %.2f× per GPU", f1(r.RunGPU), f1(r.BaseGPU), r.GPURatio)
	}
	if math.Abs(want/r.Ratio-1) <= 0.05 {
		return fmt.Sprintf("the claim %s× holds: %s", m[1], facts), nil
	}
	return fmt.Sprintf("the claim %s× is wrong: %s", m[1], facts), nil
}

// Metric is one figure of an A/B comparison at one concurrency.
type Metric struct {
	Name        string
	A, B        float64
	Ratio       float64 // B / A
	Lo, Hi      float64 // 95% interval of the ratio (else NaN)
	P           float64 // a test's p where one was made without an interval (else NaN)
	Significant bool
	// Resolves is the least relative difference the comparison could
	// have told from none (the interval's half width, 0.04 for ±4%);
	// Unit is what varied independently ("repeats" or "time blocks")
	// and Units how many of them the interval rests on.
	Resolves float64
	Unit     string
	Units    int
	// Withheld, when set, is why the difference is not judged: a stage of
	// either side was not measured validly (Significant is then false).
	Withheld string
}

// MarshalJSON writes the metric with null for a figure it does not have.
func (m Metric) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name        string   `json:"name"`
		A           *float64 `json:"a"`
		B           *float64 `json:"b"`
		Ratio       *float64 `json:"ratio"`
		Lo          *float64 `json:"ratio_lo,omitempty"`
		Hi          *float64 `json:"ratio_hi,omitempty"`
		P           *float64 `json:"p,omitempty"`
		Significant bool     `json:"significant"`
		Resolves    *float64 `json:"resolves,omitempty"`
		Unit        string   `json:"unit,omitempty"`
		Units       int      `json:"units,omitempty"`
		Withheld    string   `json:"withheld,omitempty"`
	}{m.Name, finite(m.A), finite(m.B), finite(m.Ratio), finite(m.Lo), finite(m.Hi), finite(m.P), m.Significant, finite(m.Resolves), m.Unit, m.Units, m.Withheld})
}

// Pair compares two runs' stages of the same key: aggregate tok/s,
// decode tok/s p50 and TTFT p50, each ratio with a 95% interval from the
// stages' time blocks (pairBlocks), never from requests as if they were
// independent: they share the batch's steps (METRICS.md, "Error model").
// A difference is significant only when its interval leaves out 1. Both
// stages need their samples (Fold.KeepSamples).
func Pair(a, b *Stage) []Metric {
	out := pairBlocks(a, b)
	agg := &out[0]
	na, nb := a.samples != nil && len(a.samples.Pairs) > 0, b.samples != nil && len(b.samples.Pairs) > 0
	switch {
	case na && !nb && failedAll(b):
		// Every request of B failed where A's finished: a drop to 0 tok/s
		// is no sampling accident, whatever the test could say.
		agg.Ratio, agg.Lo, agg.Hi, agg.Significant = 0, 0, 0, true
	case !na && nb && failedAll(a):
		agg.Ratio, agg.Lo, agg.Hi, agg.Significant = math.Inf(1), math.Inf(1), math.Inf(1), true
	}
	return out
}

// failedAll says whether a tokperf stage (one whose samples were kept)
// measured requests of which none finished ok.
func failedAll(s *Stage) bool {
	return s.samples != nil && s.Requests > s.Cancelled && s.OK == 0
}

// CompareSchema names the JSON form of a Comparison and its version.
const CompareSchema = "tokperf-compare/1"

// Comparison is an A/B of runs: each later run (B) against the first (A),
// stage by stage where both have a stage of the same key, with the setup
// differences of each pair.
type Comparison struct {
	Schema   string          `json:"schema"`
	Files    []string        `json:"files"` // A first
	Stages   []ComparedStage `json:"stages"`
	Fairness []PairFairness  `json:"fairness"` // one per B
	// Energy is each stage's J per 1000 tokens and $/Mtok of A and B,
	// with whether they may be compared (EnergyFairness).
	Energy []EnergyFigure `json:"energy,omitempty"`
	// Notes say what a file lacks or how many of its requests failed: a
	// ratio against a run whose requests failed means little.
	Notes []string `json:"notes,omitempty"`
	// Speculation explains speculative decoding where one of a pair used
	// it and the other did not (one per such B).
	Speculation []*Speculation `json:"speculation,omitempty"`
	// Runs are the runs compared, A first, for the charts (not in the JSON).
	Runs []*Run `json:"-"`
}

// ComparedStage is one stage key's metrics, one list per B (nil where that
// B has no such stage).
type ComparedStage struct {
	Label       string     `json:"label"`
	Concurrency int        `json:"concurrency"`
	Rate        float64    `json:"rate,omitempty"`
	Metrics     [][]Metric `json:"metrics"`
	// Resolution says, per B, the least difference the comparison could
	// resolve and how to see less ("" where it has no interval).
	Resolution []string `json:"resolution,omitempty"`
}

// PairFairness is the setup comparison of A with one B.
type PairFairness struct {
	B       string  `json:"b"`
	Fields  []Field `json:"fields"`
	Verdict string  `json:"verdict"`
}

// Compare sets every run after the first against the first. Runs need
// their samples (Fold.KeepSamples). gpus and gpu override what the files
// say, for the fairness list. Stages are those of A that every B has too.
func Compare(runs []*Run, gpus int, gpu string) (*Comparison, error) {
	if len(runs) < 2 {
		return nil, fmt.Errorf("an A/B needs two runs or more")
	}
	c := &Comparison{Schema: CompareSchema, Runs: runs}
	for _, r := range runs {
		c.Files = append(c.Files, r.File)
	}
	fl := make([]map[string][]Flaw, len(runs))
	for i, r := range runs {
		fl[i] = flaws(r)
	}
	keys, byA := byKey(runs[0])
	byB := make([]map[StageKey][]*Stage, len(runs))
	for i, r := range runs[1:] {
		_, byB[i+1] = byKey(r)
	}
	for _, k := range keys {
		as := byA[k]
		var energy []EnergyFigure
		row := ComparedStage{Label: stageLabel(as[0].Stage), Concurrency: k.Concurrency, Rate: k.Rate}
		for bi, r := range runs[1:] {
			bs := byB[bi+1][k]
			if bs == nil {
				row.Metrics, row.Resolution = nil, nil
				break
			}
			// Repeat i of A against repeat i of B: the repeats are the
			// units that vary independently (PairRepeats).
			ms := PairRepeats(as, bs)
			if why := repeatsWithheld(runs[0], fl[0], as, r, fl[bi+1], bs); why != "" {
				for j := range ms {
					ms[j].Significant, ms[j].Withheld = false, why
				}
				c.Notes = append(c.Notes, Label(as[0].Stage)+": "+NotJudged(why))
			}
			row.Metrics = append(row.Metrics, ms)
			row.Resolution = append(row.Resolution, Resolution(ms))
			energy = append(energy, EnergyPair(runs[0], as[0], r, bs[0])...)
		}
		if row.Metrics != nil {
			c.Stages = append(c.Stages, row)
			c.Energy = append(c.Energy, energy...)
		}
	}
	if len(c.Stages) == 0 {
		return nil, fmt.Errorf("the files share no stage (no concurrency level or rate in common)")
	}
	for _, r := range runs {
		c.Notes = append(c.Notes, r.notes()...)
	}
	for _, r := range runs[1:] {
		fields, verdict := Fairness(RunSide("A", runs[0].Setup, gpus, gpu), RunSide("B", r.Setup, gpus, gpu))
		c.Fairness = append(c.Fairness, PairFairness{B: r.File, Fields: fields, Verdict: verdict})
		if x := pairSpeculation(runs[0], r); x != nil {
			c.Speculation = append(c.Speculation, x)
		}
	}
	return c, nil
}

// pairWithheld is why an A/B of stages a (of run ra) and b (of rb) is not
// judged: either was measured on a starved simulator, by a lagging client,
// or finished too few requests; "" when both stand. A stage whose every
// request failed is judged: its drop to 0 tok/s is the finding.
func pairWithheld(ra *Run, fa map[string][]Flaw, a *Stage, rb *Run, fb map[string][]Flaw, b *Stage) string {
	var why []string
	for _, side := range []struct {
		name string
		r    *Run
		fl   map[string][]Flaw
		s    *Stage
	}{{"A", ra, fa, a}, {"B", rb, fb, b}} {
		if bs := basis(side.fl, []string{Label(side.s.Stage)}, FlawStarved, FlawKernel, FlawLag, FlawFew); !bs.Judged() {
			why = append(why, fmt.Sprintf("%s (%s): %s", side.name, side.r.File, bs.Withheld))
		}
	}
	return strings.Join(why, "; ")
}

// repeatsWithheld is why an A/B of a level's repeats is not judged: the
// first pair of repeats where either was not measured validly; "" when
// all stand.
func repeatsWithheld(ra *Run, fa map[string][]Flaw, as []*Stage, rb *Run, fb map[string][]Flaw, bs []*Stage) string {
	n := max(1, min(len(as), len(bs)))
	for i := range n {
		if why := pairWithheld(ra, fa, as[i], rb, fb, bs[i]); why != "" {
			return why
		}
	}
	return ""
}

// stageLabel is a stage's name in a comparison's first column: its
// concurrency, or its rate.
func stageLabel(s summary.Stage) string {
	if s.Rate > 0 {
		l := fmt.Sprintf("%g/s", s.Rate)
		if s.Concurrency > 0 {
			l += fmt.Sprintf(" (≤%d)", s.Concurrency)
		}
		return l
	}
	return strconv.Itoa(s.Concurrency)
}

// BaselineSchema names the JSON form of a BaselineComparison.
const BaselineSchema = "tokperf-baseline/1"

// BaselineComparison is a run against a published baseline: the ratios
// with their arithmetic, per GPU where GPU counts differ, the fairness
// list, and a claim checked if one was given.
type BaselineComparison struct {
	Schema   string             `json:"schema"`
	Run      Side               `json:"run"`
	Baseline *baseline.Baseline `json:"baseline"`
	Ratios   []Ratio            `json:"ratios"`
	Fields   []Field            `json:"fields"`
	Verdict  string             `json:"verdict"`
	Claim    string             `json:"claim,omitempty"`
	// Basis names the run's stages the ratios rest on and, when one was
	// not measured validly, why they are not judged (the claim then says
	// "not judged: …" too).
	Basis *Basis `json:"basis,omitempty"`
	// Source is the run compared, for the charts (not in the JSON).
	Source *Run `json:"-"`
}

// AgainstBaselineRun compares a run with b; claim, when not empty, is a
// ratio stated in words to check ("3x").
func AgainstBaselineRun(run *Run, b *baseline.Baseline, gpus int, gpu, claim string) (*BaselineComparison, error) {
	side := RunSide(run.File, run.Setup, gpus, gpu)
	c := &BaselineComparison{Schema: BaselineSchema, Run: side, Baseline: b, Ratios: AgainstBaseline(run.Figures(), side, b), Source: run}
	c.Fields, c.Verdict = Fairness(side, BaselineSide(b))
	var cs []int
	for _, r := range c.Ratios {
		cs = append(cs, r.C)
	}
	// As an experiment's fair verdict that quotes it: a flaw of 5% or more
	// at a shared level withholds the ratios and the claim.
	c.Basis = bounded(flaws(run), run.labelsAt(cs...), within(DefaultTolerance))
	if claim != "" {
		line, err := Claim(claim, c.Ratios)
		if err != nil {
			return nil, err
		}
		c.Claim = line
		if !c.Basis.Judged() {
			c.Claim = NotJudged(c.Basis.Withheld)
		}
	}
	return c, nil
}

// Withheld lists the comparison's judgements that are withheld, with
// their reasons; empty when all stand.
func (c *BaselineComparison) Withheld() []string {
	if c.Basis.Judged() {
		return nil
	}
	return []string{"ratios: " + c.Basis.Withheld}
}

// Withheld lists the A/B differences that are not judged, with their
// reasons, one per stage and B; empty when all stand.
func (c *Comparison) Withheld() []string {
	var out []string
	for _, st := range c.Stages {
		label := "C=" + st.Label
		if st.Rate > 0 {
			label = "rate " + st.Label
		}
		for _, ms := range st.Metrics {
			if len(ms) > 0 && ms[0].Withheld != "" {
				out = append(out, label+": "+ms[0].Withheld)
			}
		}
	}
	return out
}

// notes say how many of a run's requests failed and whether its file is whole.
func (r *Run) notes() []string {
	var out []string
	if r.Source != nil {
		sampled := false
		for i := range r.Stages {
			x := r.Stages[i].samples
			sampled = sampled || (x != nil && (len(x.Pairs) > 0 || len(x.TTFT) > 0 || len(x.Decode) > 0))
		}
		if sampled {
			out = append(out, fmt.Sprintf("%s: figures from %s's per-request lists, tested like tokperf's own where both sides have them", r.File, r.Source.Tool))
		} else {
			out = append(out, fmt.Sprintf("%s: figures from %s's summary, with no per-request samples: its ratios are shown untested, none is called significant", r.File, r.Source.Tool))
		}
	}
	if failed, total := r.Failed(); failed > 0 {
		out = append(out, fmt.Sprintf("%s: %d of %s failed; its figures cover the %d that finished ok", r.File, failed, record.Plural(total, "request"), total-failed))
	}
	switch {
	case r.Integrity.Truncated:
		out = append(out, r.File+": the last line was cut short (a crash mid-write)")
	case !r.Integrity.Ended:
		out = append(out, r.File+": no end line (the run did not finish cleanly)")
	case r.Integrity.Interrupted:
		out = append(out, r.File+": the run was interrupted")
	}
	return out
}
