package analyze

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/tokperf/tokperf/internal/baseline"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// Side is what is known of one side of a comparison, a run or a baseline.
// An empty string or zero is unknown.
type Side struct {
	Name         string
	Model        string
	Quantization string
	GPU          string
	GPUs         int
	Engine       string
	Speculative  string
	Endpoint     string
	InputTokens  int
	OutputTokens int
	Levels       []int
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
	switch s.Endpoint {
	case "generate", "completions":
		side.Endpoint = "raw generation endpoint"
	case "chat", "api-chat":
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
	return side
}

// Field is one setup field of both sides and whether it matches.
type Field struct {
	Name, A, B string
	Verdict    string // same, different, unknown
}

// Fairness lists the setup fields and ends with "comparable" when every one
// is known and the same, "context only" otherwise (METRICS.md §4).
func Fairness(a, b Side) ([]Field, string) {
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
	rows := []struct{ name, a, b string }{
		{"model", a.Model, b.Model},
		{"quantization", a.Quantization, b.Quantization},
		{"GPU type", a.GPU, b.GPU},
		{"GPU count", num(a.GPUs), num(b.GPUs)},
		{"engine", a.Engine, b.Engine},
		{"input tokens", num(a.InputTokens), num(b.InputTokens)},
		{"output tokens", num(a.OutputTokens), num(b.OutputTokens)},
		{"speculative decoding", speculative(a.Speculative), speculative(b.Speculative)},
		{"endpoint", a.Endpoint, b.Endpoint},
		{"concurrency", levels(a.Levels), levels(b.Levels)},
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
	C         int
	Run, Base float64 // aggregate tok/s
	Ratio     float64
	PerGPU    bool    // both GPU counts known and different
	RunGPU    float64 // per GPU
	BaseGPU   float64
	GPURatio  float64
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
	Lo, Hi      float64 // 95% interval of the ratio, when bootstrapped
	P           float64 // Mann–Whitney p, when tested
	Significant bool
}

// Level is what a comparison needs of one run at one concurrency: its
// figures and three numbers per ok request, not its Records.
type Level struct {
	Stage  summary.Stage
	Pairs  [][2]float64 // output tokens and latency (s), for the aggregate's interval
	Decode []float64    // decode tok/s
	TTFT   []float64    // ms
}

// Levels gathers a run's measured closed-loop records, one at a time, by
// concurrency level.
type Levels struct {
	accs map[int]*summary.Acc
	lv   map[int]*Level
}

// NewLevels starts an empty gathering.
func NewLevels() *Levels { return &Levels{accs: map[int]*summary.Acc{}, lv: map[int]*Level{}} }

// LevelsOf gathers records already in memory.
func LevelsOf(recs []record.Record) *Levels {
	l := NewLevels()
	for i := range recs {
		l.Add(&recs[i])
	}
	return l
}

// Add takes one record; warm-up and open-loop records are skipped.
func (l *Levels) Add(r *record.Record) {
	if r.Warmup || r.Rate != 0 {
		return
	}
	c := r.Concurrency
	a, v := l.accs[c], l.lv[c]
	if a == nil {
		a, v = summary.NewAcc(c, record.SLO{}), &Level{}
		l.accs[c], l.lv[c] = a, v
	}
	a.Add(r)
	if !r.OK() {
		return
	}
	if r.LastToken != record.Unset {
		v.Pairs = append(v.Pairs, [2]float64{float64(r.OutputTokens), (r.LastToken - r.Sent).Seconds()})
	}
	if d, ok := decodeTokS(r); ok {
		v.Decode = append(v.Decode, d)
	}
	if r.FirstToken != record.Unset {
		v.TTFT = append(v.TTFT, float64(r.FirstToken-r.Sent)/1e6)
	}
}

// Concurrencies lists the levels gathered, lowest first.
func (l *Levels) Concurrencies() []int {
	var out []int
	for c := range l.lv {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}

// At is the level at concurrency c, nil if the run has none.
func (l *Levels) At(c int) *Level {
	v := l.lv[c]
	if v != nil && v.Stage.Requests == 0 {
		v.Stage = l.accs[c].Stage()
	}
	return v
}

// Pair compares two runs' levels at the same concurrency: aggregate tok/s
// (bootstrap interval of the ratio), and per-request decode tok/s and TTFT
// (medians, Mann–Whitney U). A difference is significant only when the test
// says so (METRICS.md §4).
func Pair(a, b *Level, c int) []Metric {
	sa, sb := a.Stage, b.Stage
	// The interval comes from resampling requests in the Little's-law
	// estimate (Σ tokens / Σ latency), scaled onto the measured ratio.
	pa, pb := a.Pairs, b.Pairs
	lo, hi := stats.RatioCI(pa, pb, 2000, uint64(c))
	agg := Metric{Name: "aggregate tok/s", A: sa.AggregateTokS, B: sb.AggregateTokS, P: math.NaN()}
	agg.Ratio = agg.B / agg.A
	if est := ratioOfSums(pb) / ratioOfSums(pa); est > 0 {
		lo, hi = lo*agg.Ratio/est, hi*agg.Ratio/est
	}
	agg.Lo, agg.Hi = lo, hi
	agg.Significant = !(lo <= 1 && hi >= 1)
	out := []Metric{agg}
	for _, m := range []struct {
		name   string
		xa, xb []float64
		dist   func(s summary.Stage) float64
	}{
		{"decode tok/s p50", a.Decode, b.Decode, func(s summary.Stage) float64 { return s.DecodeTokS.P50 }},
		{"TTFT p50 ms", a.TTFT, b.TTFT, func(s summary.Stage) float64 { return s.TTFT.P50 }},
	} {
		_, p := stats.MannWhitney(m.xa, m.xb)
		v := Metric{Name: m.name, A: m.dist(sa), B: m.dist(sb), P: p, Lo: math.NaN(), Hi: math.NaN()}
		v.Ratio = v.B / v.A
		v.Significant = p < 0.05
		out = append(out, v)
	}
	return out
}

func ratioOfSums(ps [][2]float64) float64 {
	var x, y float64
	for _, p := range ps {
		x += p[0]
		y += p[1]
	}
	return x / y
}

func decodeTokS(r *record.Record) (float64, bool) {
	if len(r.Chunks) == 0 {
		return 0, false
	}
	n, dt := r.OutputTokens-r.Chunks[0].Tokens, r.LastToken-r.FirstToken
	return float64(n) / dt.Seconds(), n > 0 && dt > 0
}
