package analyze

import (
	"math"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// specStage is a stage at level c whose decode chunks came every icl ms
// holding l tokens each (ITL = icl / l), at agg tok/s.
func specStage(c int, icl, l, agg float64) Stage {
	s := Stage{Stage: summary.Stage{Concurrency: c, AggregateTokS: agg,
		ICL: stats.Dist{N: 100, Mean: icl}, ITL: stats.Dist{N: 100, Mean: icl / l},
		ChunkSources: map[record.TokenSource]int{record.SourceContinuous: 10}}}
	return s
}

// The explanation's arithmetic: the acceptance length from the counters
// where there are some (else from the chunks), a verify step's time as
// ITL × L, and measured = expected / step cost; the run without
// speculation is the base whichever side it is on.
func TestExplainSpeculation(t *testing.T) {
	t.Parallel()
	base := &Run{File: "base.jsonl", Stages: []Stage{specStage(1, 6, 1, 170), specStage(32, 14, 1, 2000)}}
	spec := &Run{File: "mtp.jsonl", Stages: []Stage{specStage(1, 7.5, 2.5, 320), specStage(32, 45, 2.5, 1800), specStage(64, 60, 2.5, 2100)}}
	// The counters say 3.55 tokens a step, 85% of the drafts accepted:
	// the stream's chunks then hold several steps' tokens.
	spec.Stages[1].Server = &ServerReading{SpecLength: 3.55, SpecRate: 0.85}
	if Speculative(base) || !Speculative(spec) {
		t.Fatalf("speculative: base %v, spec %v", Speculative(base), Speculative(spec))
	}
	for _, pair := range [][2]*Run{{base, spec}, {spec, base}} {
		x := pairSpeculation(pair[0], pair[1])
		if x == nil || x.Base != "base.jsonl" || x.Spec != "mtp.jsonl" || len(x.Levels) != 2 {
			t.Fatalf("explanation %+v", x)
		}
		one, many := x.Levels[0], x.Levels[1]
		near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
		if one.Source != "tokens per chunk" || !near(one.TokensPerStep, 2.5) || !near(one.StepMs, 7.5) || !near(one.StepCost, 1.25) || !near(one.Measured, 2) || !near(one.AggregateRatio, 320.0/170) {
			t.Errorf("C=1: %+v", one)
		}
		if many.Source != "server counters" || !near(many.TokensPerStep, 3.55) || !near(many.StepMs, 18*3.55) || !near(many.Measured, 14.0/18) || !near(many.Measured, many.Expected/many.StepCost) {
			t.Errorf("C=32: %+v", many)
		}
		for _, want := range []string{"C=32: 3.55 tokens per verify step (server counters, 85% of drafted tokens accepted) would make decode 3.55× as fast", "(4.56×: the draft", "so decode 22% slower (0.78×)"} {
			if !strings.Contains(many.Text, want) {
				t.Errorf("no %q in %q", want, many.Text)
			}
		}
	}
	if pairSpeculation(base, base) != nil || pairSpeculation(spec, spec) != nil {
		t.Error("two runs alike in speculation explained")
	}
	// An experiment names its configurations, the one with MTP as Spec.
	e := &Experiment{Base: "mtp", Configs: []ExperimentConfig{{Name: "mtp", OK: true, Run: spec}, {Name: "plain", OK: true, Run: base}, {Name: "broken"}}}
	if xs := e.speculation(); len(xs) != 1 || xs[0].Base != "plain" || xs[0].Spec != "mtp" {
		t.Errorf("experiment's speculation %+v", xs)
	}
}
