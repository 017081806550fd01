package analyze

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/baseline"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stability"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// level is one closed-loop stage folded from records: c requests at
// once, each streaming its tokens one every 10 ms, so the stage's
// aggregate is c × 100 tok/s.
type level struct {
	c, repeat, tokens int
}

// folded folds the levels' records, stage by stage, into a Run.
func folded(levels ...level) *Run {
	setup := record.Setup{Command: "sweep", Model: "m", Endpoint: "completions", Server: record.Server{Engine: "vllm"},
		Workload: record.Workload{InputTokens: 8, OutputTokens: 100, IgnoreEOS: true}}
	f := NewFold(setup, "r.jsonl")
	f.KeepSamples()
	id := 0
	for stage, l := range levels {
		for range l.c {
			r := record.New(id)
			id++
			r.Stage, r.Concurrency, r.Repeat = stage, l.c, l.repeat
			for k := 1; k <= l.tokens; k++ {
				r.AddChunk(time.Duration(k)*10*time.Millisecond, 1)
			}
			r.FirstContent, r.Done = r.FirstToken, r.LastToken
			r.OutputTokens, r.OutputSource, r.ChunkSource, r.Status = l.tokens, record.SourceUsage, record.SourceContinuous, record.StatusOK
			f.Add(&r)
		}
	}
	f.Integrity(false, true, false)
	return f.Run()
}

// The scaling verdict of a --repeat run reads every repeat: here the
// first repeat of C=4 gives no more than C=1 (saturated, if it alone were
// read), the two others four times as much; the verdict is drawn from the
// mean aggregate over the three.
func TestRepeatVerdictUsesAllRepeats(t *testing.T) {
	t.Parallel()
	// Each level as folded runs at c × 100 tok/s; the first repeat of C=4
	// is then set as slow as C=1, and the run judged again as Fold.Run does.
	r := folded(level{1, 0, 100}, level{1, 1, 100}, level{1, 2, 100}, level{4, 0, 100}, level{4, 1, 100}, level{4, 2, 100})
	for i := range r.Stages {
		if s := &r.Stages[i]; s.Concurrency == 4 && s.Repeat == 0 {
			s.AggregateTokS = r.Stages[0].AggregateTokS
		}
	}
	r.Repeats = RepeatsOf(r.Stages)
	var aggs [2][]float64
	for _, s := range r.Stages {
		aggs[s.Concurrency/4] = append(aggs[s.Concurrency/4], s.AggregateTokS)
	}
	mean := func(xs []float64) float64 { m, _, _ := stats.MeanCI(xs); return m }
	v := Scaling(r.levels())
	want := mean(aggs[1])/mean(aggs[0]) - 1
	if math.Abs(v.Change-want) > 1e-9 || v.Kind != "rising" {
		t.Errorf("verdict %s (change %.3f), want rising by the means over all repeats, %+.3f", v.Text, v.Change, want)
	}
	if first := Scaling([]summary.Stage{r.Stages[0].Stage, r.Stages[3].Stage}); first.Kind == v.Kind {
		t.Fatalf("the first repeats alone give the same verdict (%s): the case tests nothing", first.Kind)
	}
	// Through the Fold: a run of repeats quotes the repeats it averaged.
	f := folded(level{1, 0, 50}, level{1, 1, 50}, level{4, 0, 50}, level{4, 1, 50})
	if f.Verdict == nil || !strings.Contains(f.Verdict.Text, "means over the repeats: 2 at each level") {
		t.Errorf("verdict of a repeated run: %+v", f.Verdict)
	}
}

// A repeat's interval never goes below zero, however wide the spread:
// on the log scale it is exp(mean(log x) ± t·sd(log x)/√n).
func TestRepeatIntervalNotNegative(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		xs   []float64
	}{
		{"a wide spread", []float64{1, 1, 50}},
		{"two far apart", []float64{3, 300}},
		{"with a zero", []float64{0, 10, 400}},
		{"steady", []float64{100, 101, 99}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := RepeatInterval(tc.xs)
			if !(lo >= 0) || !(hi > lo) {
				t.Errorf("interval [%g, %g]", lo, hi)
			}
			m, half, _ := stats.MeanCI(tc.xs)
			if m-half < 0 && lo < 0 {
				t.Errorf("the interval follows the mean's below zero: %g", lo)
			}
		})
	}
	// The definition, on values whose logs are 0, 1, 2 (mean 1, sd 1).
	lo, hi := RepeatInterval([]float64{1, math.E, math.E * math.E})
	_, half, _ := stats.MeanCI([]float64{0, 1, 2})
	if math.Abs(lo-math.Exp(1-half)) > 1e-9 || math.Abs(hi-math.Exp(1+half)) > 1e-9 {
		t.Errorf("interval [%g, %g], want [e^(1-%g), e^(1+%g)]", lo, hi, half, half)
	}
	// Through RepeatsOf: TTFT p99 of 1, 1 and 50 ms.
	var stages []Stage
	for i, p99 := range []float64{1, 1, 50} {
		stages = append(stages, Stage{Stage: summary.Stage{Concurrency: 1, Repeat: i, OK: 1, AggregateTokS: 1, TTFT: stats.Dist{P99: p99}}})
	}
	for _, rep := range RepeatsOf(stages) {
		for _, f := range rep.Figures {
			if f.Lo != nil && *f.Lo < 0 {
				t.Errorf("%s: lower bound %g", f.Name, *f.Lo)
			}
		}
	}
}

// A drop to 0 tok/s in an A/B (every request of B failed) is
// significant, not ~.
func TestCompareZeroIsSignificant(t *testing.T) {
	t.Parallel()
	a := folded(level{2, 0, 20}).Stages[0]
	b := Stage{Stage: summary.Stage{Concurrency: 2, Requests: 8, OK: 0, Errors: map[record.Status]int{record.StatusHTTPError: 8}}, samples: &Samples{}}
	m := Pair(&a, &b)[0]
	if !m.Significant || m.Ratio != 0 {
		t.Errorf("aggregate %+v, want ratio 0, significant", m)
	}
	// Another tool's file has no samples at all: still nothing is called
	// significant without a test.
	foreign := Stage{Stage: summary.Stage{Concurrency: 2, Requests: 8, OK: 8, AggregateTokS: 10}}
	if m := Pair(&a, &foreign)[0]; m.Significant {
		t.Errorf("a file without samples: %+v", m)
	}
}

// starve marks stage i of r as measured on a simulator that ran most of
// its steps late, as its /metrics reading says.
func starve(r *Run, i int) {
	r.Stages[i].Server = &ServerReading{Samples: 5, SimSteps: 1000, SimLateSteps: 205}
}

// gated is r judged again as Fold.Run does, after its stages changed.
func gated(r *Run) *Run {
	r.Warnings = runWarnings(r)
	if v := Scaling(r.levels()); !r.OpenLoop && len(r.levels()) >= 2 {
		r.Verdict = &v
	}
	r.gate()
	return r
}

func TestVerdictGates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		run    func() *Run
		judged bool
		want   string // in the reason
	}{
		{"valid", func() *Run { return folded(level{1, 0, 40}, level{4, 0, 40}) }, true, ""},
		{"a starved level", func() *Run {
			r := folded(level{1, 0, 40}, level{4, 0, 40})
			starve(r, 1)
			return gated(r)
		}, false, "C=4's simulator ran 20.5% of its steps late"},
		{"a simulator 3% behind its pace, 70% from changing the verdict", func() *Run {
			r := folded(level{1, 0, 40}, level{4, 0, 40})
			r.Stages[1].Server = &ServerReading{Samples: 5, SimSteps: 1000, SimLateSteps: 205, SimStepS: 9.7, SimBusyS: 10}
			return gated(r)
		}, true, ""},
		{"the upper level's simulator 3% behind its pace, 12% a doubling: the true gain is only higher", func() *Run {
			r := folded(level{16, 0, 40}, level{32, 0, 40})
			r.Stages[1].AggregateTokS = 1.12 * r.Stages[0].AggregateTokS
			r.Stages[1].Server = &ServerReading{Samples: 5, SimSteps: 1000, SimLateSteps: 205, SimStepS: 9.7, SimBusyS: 10}
			return gated(r)
		}, true, ""},
		{"the lower level's simulator 3% behind its pace, 12% a doubling: the true gain may be under 10%", func() *Run {
			r := folded(level{16, 0, 40}, level{32, 0, 40})
			r.Stages[1].AggregateTokS = 1.12 * r.Stages[0].AggregateTokS
			r.Stages[0].Server = &ServerReading{Samples: 5, SimSteps: 1000, SimLateSteps: 205, SimStepS: 9.7, SimBusyS: 10}
			return gated(r)
		}, false, "C=16's simulator ran 3.0% behind its pace, enough to change it"},
		{"the machine resent 12 segments in 4 requests, none of them the client's", func() *Run {
			r := folded(level{1, 0, 40}, level{4, 0, 40})
			r.Stages[1].Server = &ServerReading{Samples: 5, HostDropped: 30, HostRetrans: 12}
			r.Stages[1].Host = &record.Host{To: time.Second, Known: []string{"tcp_info"}}
			return gated(r)
		}, true, ""},
		{"the client's own connections resent 40 segments at the lower level", func() *Run {
			r := folded(level{1, 0, 40}, level{4, 0, 40})
			r.Stages[0].Host = &record.Host{To: time.Second, Retrans: 40, Known: []string{"tcp_info"}}
			return gated(r)
		}, false, "the client's connections resent 40 TCP segments at C=1, enough to change it"},
		{"the client's own connections resent 40 segments at the upper level of a rising verdict", func() *Run {
			r := folded(level{1, 0, 40}, level{4, 0, 40})
			r.Stages[1].Host = &record.Host{To: time.Second, Retrans: 40, Known: []string{"tcp_info"}}
			return gated(r)
		}, true, ""},
		{"9 resent segments on the machine, 4 requests", func() *Run {
			r := folded(level{1, 0, 40}, level{4, 0, 40})
			r.Stages[1].Server = &ServerReading{Samples: 5, HostRetrans: 9}
			return gated(r)
		}, true, ""},
		{"15 resent segments in 2,000 requests", func() *Run {
			r := folded(level{1, 0, 40}, level{2000, 0, 4})
			r.Stages[1].Server = &ServerReading{Samples: 5, HostDropped: 1, HostRetrans: 15}
			return gated(r)
		}, true, ""},
		{"fewer requests than slots", func() *Run {
			r := folded(level{1, 0, 40}, level{16, 0, 40})
			r.Stages[1].OK = 9
			return gated(r)
		}, false, "C=16 finished 9 requests for 16 slots"},
		{"above linear", func() *Run {
			r := folded(level{16, 0, 40}, level{32, 0, 40})
			r.Stages[1].AggregateTokS = 3.11 * r.Stages[0].AggregateTokS
			return gated(r)
		}, false, "above linear (211% efficiency)"},
		{"every request failed", func() *Run {
			r := folded(level{1, 0, 40}, level{4, 0, 40})
			r.Stages[1].OK = 0
			return gated(r)
		}, false, "every request at C=4 failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.run()
			v := r.Verdict
			if v == nil || v.Basis == nil {
				t.Fatalf("no verdict with a basis: %+v", v)
			}
			if v.Basis.Judged() != tc.judged || !strings.Contains(v.Basis.Withheld, tc.want) {
				t.Fatalf("basis %+v, want judged %v with %q", *v.Basis, tc.judged, tc.want)
			}
			if len(v.Basis.Withheld) > 120 {
				t.Errorf("a withheld verdict's reason is %d characters, not one short line: %q", len(v.Basis.Withheld), v.Basis.Withheld)
			}
			if v.Basis.Note != "" && !strings.HasSuffix(v.Text, v.Basis.Within()) {
				t.Errorf("a verdict standing within a bound does not say it: %q", v.Text)
			}
			if tc.judged {
				if len(r.Withheld()) != 0 || v.Kind == "not_judged" {
					t.Errorf("a valid run withholds %v (%s)", r.Withheld(), v.Text)
				}
				return
			}
			if v.Kind != "not_judged" || v.Text != NotJudged(v.Basis.Withheld) || v.Peak != 0 || v.Knee != 0 {
				t.Errorf("verdict %+v, want not_judged with no peak or knee", *v)
			}
			for _, st := range v.Steps {
				if st.Withheld == "" || strings.Contains(st.Text, "efficient)") {
					t.Errorf("step %+v states a finding", st)
				}
			}
			if len(r.Withheld()) == 0 {
				t.Error("Withheld lists nothing (--strict would exit 0)")
			}
		})
	}
}

// A stability verdict on a starved simulator is withheld, and its
// warning with it.
func TestStabilityGate(t *testing.T) {
	t.Parallel()
	r := folded(level{4, 0, 40})
	r.Stages[0].Stability = &stability.Verdict{Kind: "degrading", Text: "degrading: aggregate tok/s −30%/h"}
	starve(r, 0)
	r = gated(r)
	s := r.Stages[0]
	if s.Stability.Kind != "not_judged" || !strings.HasPrefix(s.Stability.Text, "not judged: C=4's simulator ran 20.5% of its steps late") {
		t.Errorf("stability %+v", *s.Stability)
	}
	for _, w := range r.Warnings {
		if w.Check == "stability" {
			t.Errorf("the withheld verdict still warns: %s", w)
		}
	}
}

// The twin's predictions and SLO capacity rest on the levels it was
// fitted to.
func TestTwinGate(t *testing.T) {
	t.Parallel()
	r := folded(level{1, 0, 40}, level{4, 0, 40})
	starve(r, 1)
	r = gated(r)
	tw := &Twin{Levels: []TwinLevel{{Concurrency: 1}, {Concurrency: 4}}, SLO: &TwinSLO{Text: "C=12 meets the SLO"}}
	r.GateTwin(tw)
	if tw.Basis.Judged() || tw.SLO.Text != NotJudged(tw.Basis.Withheld) || !strings.Contains(tw.Basis.Withheld, "C=4's simulator ran 20.5% of its steps late") {
		t.Errorf("twin basis %+v, SLO %q", tw.Basis, tw.SLO.Text)
	}
	ok := &Twin{Levels: []TwinLevel{{Concurrency: 1}}, SLO: &TwinSLO{Text: "C=12 meets the SLO"}}
	r.GateTwin(ok)
	if !ok.Basis.Judged() || ok.SLO.Text != "C=12 meets the SLO" {
		t.Errorf("a twin of the valid level: %+v, %q", ok.Basis, ok.SLO.Text)
	}
}

// An A/B against a starved stage is not judged; against a stage whose
// every request failed it is (a drop to 0 is the finding).
func TestCompareGate(t *testing.T) {
	t.Parallel()
	a := folded(level{1, 0, 40}, level{4, 0, 40})
	b := folded(level{1, 0, 40}, level{4, 0, 20})
	starve(b, 1)
	b = gated(b)
	c, err := Compare([]*Run{a, b}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	w := c.Withheld()
	if len(w) != 1 || !strings.Contains(w[0], "B (r.jsonl): C=4's simulator ran 20.5% of its steps late") {
		t.Errorf("withheld %q", w)
	}
	for _, st := range c.Stages {
		for _, m := range st.Metrics[0] {
			if st.Concurrency == 4 && (m.Significant || m.Withheld == "") {
				t.Errorf("C=4 %s: %+v, want withheld", m.Name, m)
			}
			if st.Concurrency == 1 && m.Withheld != "" {
				t.Errorf("C=1 %s withheld: %s", m.Name, m.Withheld)
			}
		}
	}
}

// A baseline's ratios and the claim checked on them rest on the run's
// stages at the shared levels.
func TestBaselineGate(t *testing.T) {
	t.Parallel()
	b := &baseline.Baseline{Name: "b", Points: []baseline.Point{{Concurrency: 4, AggregateTokS: 200}}}
	r := folded(level{1, 0, 40}, level{4, 0, 40})
	c, err := AgainstBaselineRun(r, b, 0, "", "2x")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Basis.Judged() || !strings.HasPrefix(c.Claim, "the claim 2× holds") || len(c.Withheld()) != 0 {
		t.Fatalf("a valid run: basis %+v, claim %q", c.Basis, c.Claim)
	}
	starve(r, 1)
	r = gated(r)
	c, err = AgainstBaselineRun(r, b, 0, "", "2x")
	if err != nil {
		t.Fatal(err)
	}
	if c.Basis.Judged() || c.Claim != NotJudged(c.Basis.Withheld) || !strings.Contains(c.Basis.Withheld, "C=4's simulator ran 20.5% of its steps late") || len(c.Withheld()) != 1 {
		t.Errorf("a starved run: basis %+v, claim %q", c.Basis, c.Claim)
	}
	// A simulator 1% behind its pace cannot move the claim's ratio past
	// the 5% an experiment's verdicts allow: the claim is checked, with
	// the bound in the basis.
	r.Stages[1].Server = &ServerReading{Samples: 5, SimSteps: 1000, SimLateSteps: 205, SimStepS: 9.9, SimBusyS: 10}
	r = gated(r)
	c, err = AgainstBaselineRun(r, b, 0, "", "2x")
	if err != nil {
		t.Fatal(err)
	}
	if !c.Basis.Judged() || !strings.HasPrefix(c.Claim, "the claim 2× ") || math.Abs(c.Basis.Bound-0.01) > 1e-9 {
		t.Errorf("a simulator 1%% behind: basis %+v, claim %q", c.Basis, c.Claim)
	}
}
