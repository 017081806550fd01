package analyze

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/baseline"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stability"
	"github.com/tokperf/tokperf/internal/summary"
)

// stageAt is a closed-loop stage at level c whose requests each produce
// 100 tokens in about 100/rate seconds (5% noise), with the samples an A/B
// test needs; its aggregate is c × Σ tokens / Σ seconds, as Little's law.
func stageAt(c int, rate float64, seed uint64) Stage {
	r := rand.New(rand.NewPCG(seed, 1))
	var pairs [][2]float64
	var tok, sec float64
	for range 200 {
		s := 100 / rate * (1 + 0.05*(r.Float64()-0.5))
		pairs = append(pairs, [2]float64{100, s})
		tok, sec = tok+100, sec+s
	}
	return Stage{Stage: summary.Stage{Concurrency: c, Requests: 200, OK: 200, AggregateTokS: float64(c) * tok / sec}, samples: &Samples{Pairs: pairs}}
}

// runOf is a run of closed-loop levels, each at its per-request rate.
func runOf(levels []int, rates []float64, seed uint64) *Run {
	r := &Run{Setup: record.Setup{GPUs: 8, Model: "m"}}
	for i, c := range levels {
		r.Stages = append(r.Stages, stageAt(c, rates[i], seed+uint64(i)))
	}
	return r
}

func TestVerdictsNotAsked(t *testing.T) {
	t.Parallel()
	e := &Experiment{Configs: []ExperimentConfig{{Name: "a", OK: true, Run: runOf([]int{1}, []float64{50}, 1)}}}
	e.CompareConfigs([]int{1})
	v := e.ComputeVerdicts()
	for _, tc := range []struct {
		v    *LoopVerdict
		want string
	}{
		{&v.Representative, "representative: not asked — give two workloads"},
		{&v.Configurations, "configurations: not asked — give two configurations"},
		{&v.Fair, "fair: not asked — give baseline:"},
		{&v.Stable, "stable: not measured — give soak:"},
	} {
		if !strings.HasPrefix(tc.v.Line(), tc.want) || tc.v.Answered() || tc.v.RestsOn == nil {
			t.Errorf("%q (answered %v, rests on %v), want %q", tc.v.Line(), tc.v.Answered(), tc.v.RestsOn, tc.want)
		}
	}
}

// B/A per level with its interval: B is twice as fast per request at C=1
// and a quarter slower at C=32 (the MTP shape), the same at C=8 (the same
// requests: two draws of one server differ by chance, and a 5% test says
// so one time in twenty).
func TestVerdictConfigurationsGainTurnsIntoLoss(t *testing.T) {
	t.Parallel()
	levels := []int{1, 8, 32}
	a := runOf(levels, []float64{50, 40, 20}, 1)
	b := runOf(levels, []float64{100, 40, 15}, 1)
	e := &Experiment{Configs: []ExperimentConfig{{Name: "seed", OK: true, Run: a}, {Name: "seed-mtp", OK: true, Run: b}}}
	e.CompareConfigs(levels)
	v := e.ComputeVerdicts().Configurations
	if v.Answer != "differ" || !strings.Contains(v.Text, "the gain turns into a loss at C=32") {
		t.Fatalf("%+v", v)
	}
	want := map[int]float64{}
	for i, c := range levels {
		want[c] = b.Stages[i].AggregateTokS / a.Stages[i].AggregateTokS
	}
	for _, f := range v.Figures {
		if math.Abs(f.Value-want[f.Concurrency]) > 1e-12 || f.Lo == nil || f.Hi == nil || !(*f.Lo <= f.Value && f.Value <= *f.Hi) {
			t.Errorf("C=%d: %+v, want ratio %.4f inside its interval", f.Concurrency, f, want[f.Concurrency])
		}
		if sig := *f.Significant; sig != (f.Concurrency != 8) {
			t.Errorf("C=%d: significant %v", f.Concurrency, sig)
		}
	}
	if len(v.RestsOn) != 2 || v.RestsOn[0] != "seed/sweep" {
		t.Errorf("rests on %v", v.RestsOn)
	}
	// A configuration that failed leaves one: nothing to compare.
	e.Configs[1].OK = false
	e.CompareConfigs(levels)
	if v := e.ComputeVerdicts().Configurations; v.Answer != "cannot answer" || !strings.Contains(v.Text, "1 of 2 configurations passed") {
		t.Errorf("%+v", v)
	}
}

// Two workloads: one's requests are a third slower, the headline moves,
// and says so with the ratio at the highest level and its interval.
func TestVerdictRepresentative(t *testing.T) {
	t.Parallel()
	levels := []int{1, 32}
	syn, share := runOf(levels, []float64{50, 20}, 1), runOf(levels, []float64{50, 13}, 3)
	e := &Experiment{Workloads: []string{"synthetic", "sharegpt"}, Configs: []ExperimentConfig{{Name: "seed", OK: true, Run: syn,
		Workloads: []WorkloadRun{{Name: "synthetic", Run: syn}, {Name: "sharegpt", Run: share}}}}}
	e.CompareConfigs(levels)
	v := e.ComputeVerdicts().Representative
	if v.Answer != "differ" || !strings.Contains(v.Text, "C=32 sharegpt ") || !strings.Contains(v.Text, ", significant") {
		t.Fatalf("%+v", v)
	}
	var ratio32 *VerdictFigure
	for i, f := range v.Figures {
		if f.Name == "ratio" && f.Concurrency == 32 {
			ratio32 = &v.Figures[i]
		}
	}
	want := share.Stages[1].AggregateTokS / syn.Stages[1].AggregateTokS
	if ratio32 == nil || math.Abs(ratio32.Value-want) > 1e-12 || *ratio32.Hi >= 1 {
		t.Errorf("C=32 ratio %+v, want %.3f with its interval below 1", ratio32, want)
	}
	// Each workload's headline has its interval, around it, and the two
	// intervals at C=32 do not overlap (their requests differ by a third).
	agg := map[string]VerdictFigure{}
	for _, f := range v.Figures {
		if f.Name == "aggregate_tok_s" {
			if f.Lo == nil || f.Hi == nil || !(*f.Lo < f.Value && f.Value < *f.Hi) {
				t.Errorf("%+v: want an interval around the value", f)
			}
			agg[fmt.Sprint(f.Workload, f.Concurrency)] = f
		}
	}
	if a, b := agg["synthetic32"], agg["sharegpt32"]; a.Lo == nil || b.Hi == nil || *b.Hi >= *a.Lo {
		t.Errorf("C=32 intervals overlap: %+v %+v", a, b)
	}
	// The same workload twice: no significant difference.
	e.Configs[0].Workloads[1].Run = runOf(levels, []float64{50, 20}, 1)
	if v := e.ComputeVerdicts().Representative; v.Answer != "same" {
		t.Errorf("%+v", v)
	}
}

// Fair: the baseline's arithmetic, per GPU where the counts differ (the
// seed's 8 GPUs against catid's 4), with the fairness list's verdict.
func TestVerdictFair(t *testing.T) {
	t.Parallel()
	run := runOf([]int{32}, []float64{10}, 1)
	b := &baseline.Baseline{Name: "catid", Model: "other", GPUs: 4, Points: []baseline.Point{{Concurrency: 32, AggregateTokS: 1373}}}
	cmp, err := AgainstBaselineRun(run, b, 0, "", "3x")
	if err != nil {
		t.Fatal(err)
	}
	e := &Experiment{Asked: ExperimentAsked{Baseline: "catid"}, Configs: []ExperimentConfig{{Name: "seed", OK: true, Run: run, Baseline: cmp}}}
	e.CompareConfigs([]int{32})
	v := e.ComputeVerdicts().Fair
	agg := run.Stages[0].AggregateTokS
	if v.Answer != "context only" || !strings.Contains(v.Text, "same model? different") || !strings.Contains(v.Text, "the claim 3×") || len(v.Figures) != 2 {
		t.Fatalf("%+v", v)
	}
	if got, want := v.Figures[1].Value, (agg/8)/(1373.0/4); v.Figures[1].Name != "per_gpu_ratio" || math.Abs(got-want) > 1e-12 {
		t.Errorf("per GPU %+v, want %.4f", v.Figures[1], want)
	}
	// The claim's line carries the arithmetic once, the baseline's 1373 /
	// 4 = 343.25 GPU rounded one way only.
	if n := strings.Count(v.Text, "/ 1373.0 ="); n != 1 || strings.Contains(v.Text, "343.2 ") || !strings.Contains(v.Text, "343.3") {
		t.Errorf("the fair line repeats its arithmetic (%d times) or rounds 343.25 two ways: %s", n, v.Text)
	}
	// Withheld by a gate that found a stage it rests on untrustworthy.
	v.Withhold("the simulator ran 30% of its steps late in seed/sweep")
	if v.Answered() || v.Line() != "fair: withheld — the simulator ran 30% of its steps late in seed/sweep" {
		t.Errorf("%q", v.Line())
	}
}

// Stable: each configuration's soak verdict, and unstable when one is not.
func TestVerdictStable(t *testing.T) {
	t.Parallel()
	soak := func(kind string) *Run {
		return &Run{Stages: []Stage{{Stage: summary.Stage{Concurrency: 8}, Stability: &stability.Verdict{Kind: kind, Text: kind + ": aggregate -3.0 %/h [-4.0, -2.0]",
			Figures: []stability.Figure{{Name: "aggregate", Field: "aggregate_tok_s", Unit: stability.TokS, PctPerH: -3, PctPerHLo: -4, PctPerHHi: -2, State: "drift", Worse: true}}}}}}
	}
	e := &Experiment{Asked: ExperimentAsked{Soak: true}, Configs: []ExperimentConfig{
		{Name: "a", OK: true, Run: runOf([]int{8}, []float64{10}, 1), Soak: soak("stable")},
		{Name: "b", OK: true, Run: runOf([]int{8}, []float64{10}, 2), Soak: soak("degrading")},
		{Name: "c", OK: true, Run: runOf([]int{8}, []float64{10}, 3)},
	}}
	e.CompareConfigs([]int{8})
	v := e.ComputeVerdicts().Stable
	if v.Answer != "unstable" || !strings.Contains(v.Text, "b degrading: aggregate -3.0 %/h") || !strings.Contains(v.Text, "c: not measured") {
		t.Fatalf("%+v", v)
	}
	if len(v.Figures) != 2 || *v.Figures[1].Lo != -4 || v.Figures[1].State != "drift" || strings.Join(v.RestsOn, ",") != "a/soak,b/soak" {
		t.Errorf("%+v", v)
	}
	// A soak too short to judge is neither stable nor unstable.
	e.Configs[1].Soak = soak("too_short")
	e.CompareConfigs([]int{8})
	if v := e.ComputeVerdicts().Stable; v.Answer != "cannot answer" || !strings.HasPrefix(v.Text, "stable: not judged — ") {
		t.Errorf("a stable soak and one too short: %+v", v)
	}
}

// Another tool's run becomes a baseline of its closed-loop levels.
func TestBaselineOfRun(t *testing.T) {
	t.Parallel()
	r := runOf([]int{1, 16}, []float64{50, 30}, 1)
	r.Setup.Workload.InputTokens = 512
	b := BaselineOfRun("g.json", r)
	if len(b.Points) != 2 || b.Points[1].AggregateTokS != r.Stages[1].AggregateTokS || b.GPUs != 8 || b.InputTokens != 512 || b.Model != "m" {
		t.Errorf("%+v", b)
	}
}

// A stage in which nothing finished has no ratio to give: the verdicts
// still marshal (JSON has no NaN) and say what they could.
func TestVerdictsOfAnEmptyStage(t *testing.T) {
	t.Parallel()
	levels := []int{1, 4}
	a, b := runOf(levels, []float64{50, 40}, 1), runOf(levels, []float64{50, 40}, 2)
	a.Stages[1] = Stage{Stage: summary.Stage{Concurrency: 4}}
	e := &Experiment{Workloads: []string{"x", "y"}, Configs: []ExperimentConfig{
		{Name: "a", OK: true, Run: a, Workloads: []WorkloadRun{{Name: "x", Run: a}, {Name: "y", Run: b}}},
		{Name: "b", OK: true, Run: b}}}
	e.CompareConfigs(levels)
	e.ComputeVerdicts()
	if _, err := json.Marshal(e); err != nil {
		t.Fatal(err)
	}
	for _, v := range e.Verdicts.All() {
		for _, f := range v.Figures {
			if math.IsNaN(f.Value) || math.IsInf(f.Value, 0) {
				t.Errorf("%s: %+v", v.Question, f)
			}
		}
	}
}

// A verdict resting on a stage the embedded simulator served late (or any
// flawed stage) is not given, with the stage and what to do.
func TestVerdictsWithheldOnAStarvedStage(t *testing.T) {
	t.Parallel()
	levels := []int{1, 8, 32}
	a := runOf(levels, []float64{50, 40, 20}, 1)
	b := runOf(levels, []float64{100, 40, 15}, 7)
	b.Stages[2].Server = &ServerReading{SimSteps: 1000, SimLateSteps: 205}
	e := &Experiment{Configs: []ExperimentConfig{{Name: "seed", OK: true, Run: a}, {Name: "seed-mtp", OK: true, Run: b}}}
	e.CompareConfigs(levels)
	v := e.ComputeVerdicts().Configurations
	if v.Answered() || !strings.Contains(v.Withheld, "seed-mtp/sweep: C=32's simulator ran 20.5% of its steps late") ||
		!strings.Contains(v.Line(), "not judged") {
		t.Errorf("%q (withheld %q)", v.Line(), v.Withheld)
	}
	// Both configurations flawed: one line, the larger measured cause
	// and how many more.
	a.Stages[1].Server = &ServerReading{SimSteps: 1000, SimLateSteps: 300, SimStepS: 8, SimBusyS: 10}
	e.CompareConfigs(levels)
	if v := e.ComputeVerdicts().Configurations; v.Withheld != "not judged: seed-mtp/sweep: C=32's simulator ran 20.5% of its steps late (and 1 more: seed/sweep)" {
		t.Errorf("two flawed configurations: withheld %q", v.Withheld)
	}
	a.Stages[1].Server = nil
	b.Stages[2].Server = nil
	e.CompareConfigs(levels)
	if v := e.ComputeVerdicts().Configurations; !v.Answered() {
		t.Errorf("the same runs measured validly: %q", v.Line())
	}
}

// A verdict resting on a dataset's runs says how many distinct prompts the
// dataset had and how long they were, once per dataset however many
// configurations ran it, and calls fewer than FewPrompts too few; one
// resting on generated prompts says nothing of the kind.
func TestVerdictSaysItsDataset(t *testing.T) {
	t.Parallel()
	levels := []int{1, 32}
	data := func(distinct int) *Run {
		r := runOf(levels, []float64{50, 13}, 3)
		r.Setup.Workload.Input, r.Setup.Workload.DistinctPrompts = "dataset", distinct
		r.Setup.Workload.PromptLengths, r.Setup.Workload.OutputLengths = "p10 10, p50 22, p90 88, max 1000 tokens", "p10 1, p50 24, p90 116, max 571 tokens"
		r.Setup.Workload.Tokenizer = "llama3"
		return r
	}
	for _, tc := range []struct {
		distinct int
		want     string
	}{
		{427, " [dataset self-instruct: 427 distinct prompts, prompt lengths p10 10, p50 22, p90 88, max 1000 tokens, output lengths p10 1, p50 24, p90 116, max 571 tokens]"},
		{4, " [dataset self-instruct: 4 distinct prompts, prompt lengths p10 10, p50 22, p90 88, max 1000 tokens, output lengths p10 1, p50 24, p90 116, max 571 tokens: fewer than 100, too few to stand for the traffic]"},
	} {
		e := &Experiment{Workloads: []string{"synthetic", "self-instruct"}}
		for _, name := range []string{"seed", "seed-mtp"} {
			syn := runOf(levels, []float64{50, 20}, 1)
			e.Configs = append(e.Configs, ExperimentConfig{Name: name, OK: true, Run: syn,
				Workloads: []WorkloadRun{{Name: "synthetic", Run: syn}, {Name: "self-instruct", Run: data(tc.distinct)}}})
		}
		e.CompareConfigs(levels)
		vs := e.ComputeVerdicts()
		if v := vs.Representative; !strings.HasSuffix(v.Text, tc.want) || strings.Count(v.Text, "distinct prompts") != 1 {
			t.Errorf("representative: %s\nwant it to end %q", v.Text, tc.want)
		}
		// Withheld, its line still says what it would have rested on.
		v := vs.Representative
		v.Withhold("not judged: a starved simulator")
		if line := v.Line(); line != "representative: withheld — not judged: a starved simulator"+tc.want {
			t.Errorf("withheld line %q", line)
		}
		if v := vs.Configurations; strings.Contains(v.Text, "distinct prompts") {
			t.Errorf("configurations rests on %v, generated prompts: %s", v.RestsOn, v.Text)
		}
	}
}

// "No significant difference" is said only where a difference of
// Unresolved could have been seen; a ratio of 0.90× [0.07, 11.92] says the
// stages were too short to tell.
func TestUnresolvedRatioCannotTell(t *testing.T) {
	t.Parallel()
	f := func(v, lo, hi float64) VerdictFigure {
		return VerdictFigure{Name: "ratio", Concurrency: 32, Value: v, Lo: &lo, Hi: &hi, Significant: boolp(false)}
	}
	for _, tc := range []struct {
		figs []VerdictFigure
		want string
	}{
		{[]VerdictFigure{f(0.90, 0.07, 11.92)}, "C=32 resolves only ±1204.9%"},
		{[]VerdictFigure{f(1.01, 0.95, 1.07)}, ""},
		{[]VerdictFigure{{Name: "ratio", Concurrency: 8, Value: 1.1}}, "C=8 had too few requests for an interval"},
		{[]VerdictFigure{f(1.01, 0.95, 1.07), {Name: "aggregate_tok_s", Value: 100}}, ""},
	} {
		if got := unresolved(tc.figs); (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.figs, got, tc.want)
		}
	}
}
