package analyze

import (
	"fmt"
	"math"

	"github.com/tokperf/tokperf/internal/stats"
)

// Repeats are one level's figures across its repeats (--repeat): each
// repeat's value, their mean with a 95% interval (Student's t over the
// repeats) and the coefficient of variation.
type Repeats struct {
	Label       string         `json:"label"`
	Concurrency int            `json:"concurrency"`
	Rate        float64        `json:"rate,omitempty"`
	N           int            `json:"n"`
	Figures     []RepeatFigure `json:"figures"`
}

// RepeatFigure is one figure across the repeats of a level.
type RepeatFigure struct {
	Name   string    `json:"name"`
	Field  string    `json:"field"`
	Values []float64 `json:"values"`
	Mean   float64   `json:"mean"`
	Lo     *float64  `json:"lo"` // the 95% interval; null with one repeat
	Hi     *float64  `json:"hi"`
	CV     *float64  `json:"cv"` // sample sd / mean
}

// repeatFigures are the figures compared across repeats.
var repeatFigures = []struct {
	name, field string
	of          func(s *Stage) float64
}{
	{"aggregate tok/s", "aggregate_tok_s", func(s *Stage) float64 { return s.AggregateTokS }},
	{"decode tok/s mean", "decode_tok_s_mean", func(s *Stage) float64 { return s.DecodeTokS.Mean }},
	{"TTFT p50 ms", "ttft_p50_ms", func(s *Stage) float64 { return s.TTFT.P50 }},
	{"TTFT p99 ms", "ttft_p99_ms", func(s *Stage) float64 { return s.TTFT.P99 }},
	{"TPOT mean ms", "tpot_mean_ms", func(s *Stage) float64 { return s.TPOT.Mean }},
	{"ITL p50 ms", "itl_p50_ms", func(s *Stage) float64 { return s.ITL.P50 }},
}

// RepeatsOf groups a run's stages by level, in the order the levels first
// appear; nil when no stage is a repeat.
func RepeatsOf(stages []Stage) []Repeats {
	repeated := false
	for _, s := range stages {
		repeated = repeated || s.Repeat > 0
	}
	if !repeated {
		return nil
	}
	var keys []StageKey
	by := map[StageKey][]*Stage{}
	for i := range stages {
		k := stages[i].Key()
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], &stages[i])
	}
	var out []Repeats
	for _, k := range keys {
		ss := by[k]
		r := Repeats{Label: Label(ss[0].Stage), Concurrency: k.Concurrency, Rate: k.Rate, N: len(ss)}
		for _, f := range repeatFigures {
			var xs []float64
			for _, s := range ss {
				if v := f.of(s); !math.IsNaN(v) {
					xs = append(xs, v)
				}
			}
			if len(xs) == 0 {
				continue
			}
			mean, half, cv := stats.MeanCI(xs)
			r.Figures = append(r.Figures, RepeatFigure{Name: f.name, Field: f.field, Values: xs, Mean: mean, Lo: finite(mean - half), Hi: finite(mean + half), CV: finite(cv)})
		}
		out = append(out, r)
	}
	return out
}

// Figure is the repeats' figure named by field, nil when there is none.
func (r *Repeats) Figure(field string) *RepeatFigure {
	for i := range r.Figures {
		if r.Figures[i].Field == field {
			return &r.Figures[i]
		}
	}
	return nil
}

// repeatWarnings say where the run-to-run spread is wider than the
// difference between neighbouring levels: their aggregate intervals
// overlap, so the repeats cannot tell the levels apart.
func repeatWarnings(reps []Repeats) []Warning {
	var out []Warning
	for i := 1; i < len(reps); i++ {
		a, b := reps[i-1].Figure("aggregate_tok_s"), reps[i].Figure("aggregate_tok_s")
		if a == nil || b == nil || a.Lo == nil || b.Lo == nil {
			continue
		}
		if *a.Hi >= *b.Lo && *b.Hi >= *a.Lo {
			out = append(out, Warning{Stage: reps[i].Label, Check: "repeat_spread", Text: fmt.Sprintf(
				"aggregate %.1f tok/s [%.1f, %.1f] against %.1f [%.1f, %.1f] at %s: the difference (%+.1f%%) is within the run-to-run spread (CV %.1f%% and %.1f%% over %d and %d repeats); more repeats or longer stages would tell them apart",
				b.Mean, *b.Lo, *b.Hi, a.Mean, *a.Lo, *a.Hi, reps[i-1].Label, 100*(b.Mean/a.Mean-1), 100*deref(b.CV), 100*deref(a.CV), reps[i].N, reps[i-1].N)})
		}
	}
	return out
}

func deref(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}
