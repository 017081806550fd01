package analyze

import (
	"fmt"
	"math"
	"slices"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/summary"
)

// Shape is what the run's preset (record.Preset, --preset) makes of its
// figures: InferenceX's per-level figures, or the verdict of MLPerf's
// Server scenario on each stage.
type Shape struct {
	Preset   string         `json:"preset"`
	Levels   []ShapeLevel   `json:"levels,omitempty"`
	Verdicts []LimitVerdict `json:"verdicts,omitempty"`
}

// ShapeLevel is one level's figures as InferenceX publishes them
// (utils/process_result.py): total (input and output) and output tok/s
// per GPU, 0 when the GPUs are unknown, and interactivity, 1000 / median
// TPOT in ms: the tokens a second one user sees.
type ShapeLevel struct {
	Concurrency       int     `json:"concurrency"`
	TokSPerGPU        float64 `json:"tok_s_per_gpu,omitempty"`
	OutputTokSPerGPU  float64 `json:"output_tok_s_per_gpu,omitempty"`
	InteractivityTokS float64 `json:"interactivity_tok_s_per_user"`
}

// LimitVerdict is a stage judged on the SLO at the 99th percentile of its
// measured requests, as MLPerf's Server scenario judges a run: Kind is
// pass, fail or not_judged, and Text says why in one line.
type LimitVerdict struct {
	Stage     string  `json:"stage"`
	Kind      string  `json:"kind"`
	TTFTP99Ms float64 `json:"ttft_p99_ms"`
	TPOTP99Ms float64 `json:"tpot_p99_ms"`
	TTFTMaxMs float64 `json:"ttft_limit_ms,omitempty"`
	TPOTMaxMs float64 `json:"tpot_limit_ms,omitempty"`
	Requests  int     `json:"requests"`
	Text      string  `json:"text"`
	Basis     *Basis  `json:"basis,omitempty"`
}

// Verdict kinds of a LimitVerdict.
const (
	LimitPass      = "pass"
	LimitFail      = "fail"
	LimitNotJudged = "not_judged"
)

// limitSamples is the fewest ok requests whose p99 is more than the
// largest value: MLPerf's loadgen asks at least 100 queries too.
const limitSamples = 100

// shapeOf is the run's preset figures, nil without a preset that adds any.
func shapeOf(r *Run) *Shape {
	p := r.Setup.Preset
	if p == nil || (p.Judge == "" && p.Figures == "") {
		return nil
	}
	sh := &Shape{Preset: p.Name}
	if p.Figures == "interactivity" {
		for _, s := range r.Stages {
			sh.Levels = append(sh.Levels, shapeLevel(s.Stage, r.Setup.GPUs))
		}
	}
	if p.Judge == "p99" && r.Setup.SLO.Set() {
		all := flaws(r)
		for _, s := range r.Stages {
			b := basis(all, []string{Label(s.Stage)}, FlawStarved, FlawLag, FlawKernel)
			sh.Verdicts = append(sh.Verdicts, judgeP99(s, r.Setup, b, r.Integrity.Interrupted))
		}
	}
	return sh
}

func shapeLevel(s summary.Stage, gpus int) ShapeLevel {
	l := ShapeLevel{Concurrency: s.Concurrency}
	if gpus > 0 {
		l.TokSPerGPU = s.TotalTokS / float64(gpus)
		l.OutputTokSPerGPU = s.AggregateTokS / float64(gpus)
	}
	if s.TPOT.N > 0 && s.TPOT.P50 > 0 {
		l.InteractivityTokS = 1000 / s.TPOT.P50
	}
	return l
}

// judgeP99 judges one stage on the setup's SLO at p99: it fails when a
// request failed (the scenario counts every query) or a p99 is over its
// limit, and is not judged when the stage was asked to run shorter than
// the preset's minimum or was interrupted, has fewer than 100 ok
// requests, or was not measured validly.
func judgeP99(st Stage, setup record.Setup, b *Basis, interrupted bool) LimitVerdict {
	slo, s := setup.SLO, st.Stage
	ttft, tpot := st.limit.p99()
	v := LimitVerdict{Stage: Label(s), TTFTP99Ms: ttft, TPOTP99Ms: tpot, TTFTMaxMs: slo.TTFTMs, TPOTMaxMs: slo.TPOTMs, Requests: s.Requests}
	if !b.Judged() {
		v.Basis = b
	}
	failed := s.Requests - s.OK
	minS := setup.Preset.MinDurationS
	switch {
	case s.OK == 0:
		v.Kind, v.Text = LimitNotJudged, NotJudged("no request finished ok")
	case !b.Judged():
		v.Kind, v.Text = LimitNotJudged, NotJudged(b.Withheld)
	case minS > 0 && setup.Load.DurationS < minS:
		v.Kind, v.Text = LimitNotJudged, NotJudged(fmt.Sprintf("the stage was asked to last %gs; the scenario needs at least %gs", setup.Load.DurationS, minS))
	case minS > 0 && interrupted:
		v.Kind, v.Text = LimitNotJudged, NotJudged(fmt.Sprintf("the run was interrupted after %.0fs; the scenario needs at least %gs", s.WallS, minS))
	case s.OK < limitSamples:
		v.Kind, v.Text = LimitNotJudged, NotJudged(fmt.Sprintf("%s finished ok; a p99 needs %d", record.Plural(s.OK, "request"), limitSamples))
	case failed > 0:
		v.Kind, v.Text = LimitFail, fmt.Sprintf("FAIL: %d of %s failed (every query must complete)", failed, record.Plural(s.Requests, "request"))
	default:
		v.Kind = LimitPass
		if over(ttft, slo.TTFTMs) || over(tpot, slo.TPOTMs) {
			v.Kind = LimitFail
		}
		v.Text = fmt.Sprintf("%s: p99 TTFT %s, p99 TPOT %s, over %s", map[string]string{LimitPass: "PASS", LimitFail: "FAIL"}[v.Kind],
			against(ttft, slo.TTFTMs), against(tpot, slo.TPOTMs), record.Plural(s.OK, "measured request"))
	}
	return v
}

// limitAcc keeps the TTFT and TPOT (ms) of a judged stage's measured ok
// requests, for the p99 as MLPerf's loadgen takes it (results.cc): the
// sorted values' element floor(n × 0.99), one rank above tokperf's
// nearest-rank p99 when 0.99·n is whole.
type limitAcc struct{ ttft, tpot []float64 }

func (a *limitAcc) add(r *record.Record) {
	if a == nil || !r.OK() {
		return
	}
	if d, ok := r.TTFT(); ok {
		a.ttft = append(a.ttft, record.Ms(d))
	}
	if t, ok := r.TPOT(); ok {
		a.tpot = append(a.tpot, t)
	}
}

// p99 is each figure's p99 by MLPerf's rank; NaN with no samples.
func (a *limitAcc) p99() (ttft, tpot float64) {
	if a == nil {
		return math.NaN(), math.NaN()
	}
	return mlperfP99(a.ttft), mlperfP99(a.tpot)
}

// mlperfP99 is loadgen's percentile: sorted[size_t(n × 0.99)].
func mlperfP99(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(int(float64(len(s))*0.99), len(s)-1)]
}

// over says a p99 is over its limit (0: none).
func over(p99, limit float64) bool { return limit > 0 && p99 > limit }

// against is a p99 beside its limit: "812 ms ≤ 2000 ms".
func against(p99, limit float64) string {
	switch {
	case limit <= 0:
		return fmt.Sprintf("%.1f ms (no limit)", p99)
	case p99 > limit:
		return fmt.Sprintf("%.1f ms > %g ms", p99, limit)
	}
	return fmt.Sprintf("%.1f ms ≤ %g ms", p99, limit)
}

// withheld lists the preset verdicts withheld, each with its reason.
func (sh *Shape) withheld() []string {
	if sh == nil {
		return nil
	}
	var out []string
	for _, v := range sh.Verdicts {
		if v.Kind == LimitNotJudged {
			out = append(out, "preset "+sh.Preset+" "+v.Stage+": "+v.Text)
		}
	}
	return out
}

// Failed says whether a verdict of the preset failed.
func (sh *Shape) Failed() bool {
	if sh == nil {
		return false
	}
	for _, v := range sh.Verdicts {
		if v.Kind == LimitFail {
			return true
		}
	}
	return false
}
