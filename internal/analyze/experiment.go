package analyze

import (
	"github.com/tokperf/tokperf/internal/check"
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
	// Run is its sweep (nil when it failed before one finished).
	Run *Run `json:"run,omitempty"`
}

// ExperimentLevel is one concurrency level across the configurations.
type ExperimentLevel struct {
	C     int              `json:"concurrency"`
	Cells []ExperimentCell `json:"cells"` // one per configuration, in file order
	Best  string           `json:"best,omitempty"`
	// BestTokS is the best configuration's aggregate tok/s.
	BestTokS float64 `json:"best_tok_s,omitempty"`
}

// ExperimentCell is one configuration at one level.
type ExperimentCell struct {
	Failed        bool     `json:"failed"`
	AggregateTokS float64  `json:"aggregate_tok_s"`
	Ratio         *float64 `json:"ratio,omitempty"` // to the base, where significant
	Significant   bool     `json:"significant"`
	Base          bool     `json:"base"` // this cell is the base of its level
}

// CompareConfigs fills the experiment's levels: each configuration that
// passed against the first that passed (aggregate tok/s, with the ratio
// where the difference is significant), and the best at each level.
// Runs need their samples (Fold.KeepSamples).
func (e *Experiment) CompareConfigs(levels []int) {
	e.Levels, e.Passed, e.Base = nil, 0, ""
	for _, c := range e.Configs {
		if c.OK {
			e.Passed++
			if e.Base == "" {
				e.Base = c.Name
			}
		}
	}
	for _, c := range levels {
		lv := ExperimentLevel{C: c}
		var base *Stage
		for _, cfg := range e.Configs {
			if !cfg.OK {
				lv.Cells = append(lv.Cells, ExperimentCell{Failed: true})
				continue
			}
			st := cfg.Run.Find(StageKey{Concurrency: c})
			cell := ExperimentCell{}
			if st != nil {
				cell.AggregateTokS = st.AggregateTokS
			}
			if base == nil {
				base, cell.Base = st, true
			} else if st != nil {
				m := Pair(base, st)[0]
				cell.Significant = m.Significant
				if m.Significant {
					cell.Ratio = &m.Ratio
				}
			}
			if cell.AggregateTokS > lv.BestTokS {
				lv.Best, lv.BestTokS = cfg.Name, cell.AggregateTokS
			}
			lv.Cells = append(lv.Cells, cell)
		}
		e.Levels = append(e.Levels, lv)
	}
}
