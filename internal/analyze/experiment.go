package analyze

import (
	"fmt"

	"github.com/tokperf/tokperf/internal/check"
	"github.com/tokperf/tokperf/internal/stats"
)

// ExperimentSchema names the JSON form of an Experiment and its version.
const ExperimentSchema = "tokperf-experiment/1"

// Experiment is what became of each server configuration of an experiment
// file, and the comparison of those that passed, level by level.
type Experiment struct {
	Schema  string             `json:"schema"`
	Configs []ExperimentConfig `json:"configs"`
	Levels  []ExperimentLevel  `json:"levels"`
	// Base is the configuration the others are compared with: the first
	// that passed (empty: none did).
	Base string `json:"base,omitempty"`
	// Passed counts the configurations that passed their checks and sweep.
	Passed int `json:"passed"`
	// ChecksSkipped says the correctness checks were not run (skip: true):
	// "passed" then means only that the sweep ran.
	ChecksSkipped bool `json:"checks_skipped,omitempty"`
	// CheckMode is required (a failed check stops a configuration) or
	// report (it is shown and nothing stops).
	CheckMode string `json:"check_mode,omitempty"`
	// Workloads are the names of the workloads swept on each
	// configuration, in file order (empty: the sweep's own, one).
	Workloads []string `json:"workloads,omitempty"`
	// Asked says which optional parts of the loop the file asked for.
	Asked ExperimentAsked `json:"asked"`
	// Verdicts are the loop's answers (ComputeVerdicts computes them).
	Verdicts *Verdicts `json:"verdicts,omitempty"`
	// Speculation explains speculative decoding where a configuration
	// differs from the base in using it (docs/METRICS.md §4).
	Speculation []*Speculation `json:"speculation,omitempty"`
}

// ExperimentAsked is which optional sections an experiment file gave.
type ExperimentAsked struct {
	Overhead bool   `json:"overhead"`
	Soak     bool   `json:"soak"`
	Baseline string `json:"baseline,omitempty"` // its name or file
	Repeat   int    `json:"repeat,omitempty"`
	Restart  bool   `json:"restart,omitempty"`
	// Interleaved says the configurations' repeats ran in turn, A B A B,
	// each on a fresh server (repeat: 2 or more with two configurations).
	Interleaved bool `json:"interleaved,omitempty"`
}

// ExperimentConfig is one configuration's outcome.
type ExperimentConfig struct {
	Name     string  `json:"name"`
	OK       bool    `json:"ok"`
	Reason   string  `json:"reason,omitempty"` // why it failed
	Result   string  `json:"result,omitempty"` // its sweep's result file
	Log      string  `json:"log,omitempty"`    // the server's log
	LogTail  string  `json:"log_tail,omitempty"`
	StoppedS float64 `json:"stopped_s"` // how long stopping it took
	Released string  `json:"released,omitempty"`
	// Check is its correctness check (nil when skipped or not reached).
	Check *check.Result `json:"check,omitempty"`
	// CheckFailed says its check failed; in report mode the
	// configuration is compared all the same.
	CheckFailed bool `json:"check_failed,omitempty"`
	// Run is its sweep (nil when it failed before one finished): the
	// first workload's, when there are several.
	Run *Run `json:"run,omitempty"`
	// Seeds are the seed of its prompts and arrivals in each repeat (one
	// without repeats), and Logs every repeat's server log.
	Seeds []int64  `json:"seeds,omitempty"`
	Logs  []string `json:"logs,omitempty"`
	// Workloads are its sweeps, one per named workload, in file order.
	Workloads []WorkloadRun `json:"workloads,omitempty"`
	// Overhead is its raw-vs-chat measurement, Soak its long sliced stage
	// and Baseline its comparison with the file's baseline (nil: not
	// asked or not reached); Problems say what went wrong with them
	// without failing the configuration.
	Overhead   *Overhead           `json:"overhead,omitempty"`
	Soak       *Run                `json:"soak,omitempty"`
	SoakResult string              `json:"soak_result,omitempty"`
	Baseline   *BaselineComparison `json:"baseline,omitempty"`
	Problems   []string            `json:"problems,omitempty"`
}

// WorkloadRun is one named workload's sweep on a configuration.
type WorkloadRun struct {
	Name   string `json:"name"`
	Result string `json:"result,omitempty"`
	Run    *Run   `json:"run,omitempty"`
	Reason string `json:"reason,omitempty"` // why it has no run
}

// ExperimentLevel is one concurrency level across the configurations.
type ExperimentLevel struct {
	C     int              `json:"concurrency"`
	Cells []ExperimentCell `json:"cells"` // one per configuration, in file order
	// Best is the configuration with the highest aggregate, named only
	// where it is significantly above every other (else empty, and NoBest
	// says why).
	Best string `json:"best,omitempty"`
	// BestTokS is the best configuration's aggregate tok/s.
	BestTokS float64 `json:"best_tok_s,omitempty"`
	NoBest   string  `json:"no_best,omitempty"`
}

// ExperimentCell is one configuration at one level.
type ExperimentCell struct {
	Failed bool `json:"failed"`
	// AggregateTokS is the mean over the configuration's repeats.
	AggregateTokS float64  `json:"aggregate_tok_s"`
	Ratio         *float64 `json:"ratio,omitempty"` // to the base, where significant
	// Of is the ratio to the base whether or not it is significant, with
	// the 95% interval (paired repeats, else time blocks: PairRepeats).
	Of          *float64 `json:"ratio_all,omitempty"`
	Lo          *float64 `json:"ratio_lo,omitempty"`
	Hi          *float64 `json:"ratio_hi,omitempty"`
	Significant bool     `json:"significant"`
	Base        bool     `json:"base"` // this cell is the base of its level
	// Resolves is the least difference from the base the comparison
	// could resolve (0.04: ±4%), Unit and Units what it rests on.
	Resolves *float64 `json:"resolves,omitempty"`
	Unit     string   `json:"unit,omitempty"`
	Units    int      `json:"units,omitempty"`
	// Withheld is why the difference is not judged: a stage of either
	// side was not measured validly (the verdicts' gates).
	Withheld string `json:"withheld,omitempty"`
	// Energy is its J per 1000 tokens and $/Mtok against the base's,
	// refused or qualified where the two differ in what they cost
	// (EnergyFairness).
	Energy []EnergyFigure `json:"energy,omitempty"`
}

// expSide is one configuration's stages at a level, every repeat.
type expSide struct {
	name   string
	run    *Run
	fl     map[string][]Flaw
	stages []*Stage
}

// pair compares two configurations' repeats at a level under the
// verdicts' validity gates.
func (a expSide) pair(b expSide) (Metric, string) {
	m := PairRepeats(a.stages, b.stages)[0]
	why := repeatsWithheld(a.run, a.fl, a.stages, b.run, b.fl, b.stages)
	if why != "" {
		m.Significant = false
	}
	return m, why
}

// CompareConfigs fills the experiment's levels: each configuration that
// passed against the first that passed (aggregate tok/s over every
// repeat, repeat i paired with repeat i, with the ratio where the
// difference is significant and judged), and the best at each level
// where it is significantly the best. Runs need their samples
// (Fold.KeepSamples).
func (e *Experiment) CompareConfigs(levels []int) {
	e.Levels, e.Passed, e.Base = nil, 0, ""
	fl := map[string]map[string][]Flaw{}
	for _, c := range e.Configs {
		if c.OK && c.Run != nil {
			e.Passed++
			if e.Base == "" {
				e.Base = c.Name
			}
			fl[c.Name] = flaws(c.Run)
		}
	}
	for _, c := range levels {
		lv := ExperimentLevel{C: c}
		var base *expSide
		var sides []expSide
		for _, cfg := range e.Configs {
			if !cfg.OK || cfg.Run == nil {
				lv.Cells = append(lv.Cells, ExperimentCell{Failed: true})
				continue
			}
			_, by := byKey(cfg.Run)
			side := expSide{name: cfg.Name, run: cfg.Run, fl: fl[cfg.Name], stages: by[StageKey{Concurrency: c}]}
			cell := ExperimentCell{}
			if side.stages != nil {
				var xs []float64
				for _, st := range side.stages {
					xs = append(xs, st.AggregateTokS)
				}
				cell.AggregateTokS, _, _ = stats.MeanCI(xs)
				sides = append(sides, side)
			}
			if base == nil {
				if side.stages != nil {
					base = &side
				}
				cell.Base = true
			} else if side.stages != nil {
				m, why := base.pair(side)
				cell.Energy = EnergyPair(base.run, base.stages[0], side.run, side.stages[0])
				cell.Significant, cell.Withheld = m.Significant, why
				cell.Of, cell.Lo, cell.Hi = finite(m.Ratio), finite(m.Lo), finite(m.Hi)
				cell.Resolves, cell.Unit, cell.Units = finite(m.Resolves), m.Unit, m.Units
				if m.Significant {
					cell.Ratio = &m.Ratio
				}
			}
			lv.Cells = append(lv.Cells, cell)
		}
		lv.Best, lv.BestTokS, lv.NoBest = best(sides)
		e.Levels = append(e.Levels, lv)
	}
	e.Speculation = e.speculation()
}

// speculation explains speculative decoding between the base and each
// configuration that passed and differs from it in using it.
func (e *Experiment) speculation() []*Speculation {
	var base *Run
	for _, c := range e.Configs {
		if c.Name == e.Base {
			base = c.Run
		}
	}
	var out []*Speculation
	for _, c := range e.Configs {
		if base == nil || !c.OK || c.Run == nil || c.Name == e.Base {
			continue
		}
		if x := pairSpeculation(base, c.Run); x != nil {
			x.Base, x.Spec = e.Base, c.Name
			if Speculative(base) {
				x.Base, x.Spec = c.Name, e.Base
			}
			out = append(out, x)
		}
	}
	return out
}

// best names the configuration with the highest aggregate where its
// difference from every other is significant and judged; otherwise it
// says why there is none.
func best(sides []expSide) (string, float64, string) {
	if len(sides) == 0 {
		return "", 0, "no configuration measured this level"
	}
	top, tok := 0, -1.0
	for i, s := range sides {
		var xs []float64
		for _, st := range s.stages {
			xs = append(xs, st.AggregateTokS)
		}
		if m, _, _ := stats.MeanCI(xs); m > tok {
			top, tok = i, m
		}
	}
	for i, s := range sides {
		if i == top {
			continue
		}
		m, why := s.pair(sides[top])
		switch {
		case why != "":
			// The reason is the cell's, said once beside the table.
			return "", 0, fmt.Sprintf("%s against %s not judged", sides[top].name, s.name)
		case !m.Significant:
			return "", 0, fmt.Sprintf("%s and %s do not differ significantly (%s)", sides[top].name, s.name, ratioText(m.Ratio, finite(m.Lo), finite(m.Hi)))
		}
	}
	return sides[top].name, tok, ""
}
