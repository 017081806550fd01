package analyze

import (
	"fmt"
	"math"
	"strings"

	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// Repeats are one level's figures across its repeats (--repeat): each
// repeat's value, their mean, a 95% interval (RepeatInterval: Student's t
// on the log scale, never below zero) and the coefficient of variation.
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

// RepeatInterval is the 95% interval of a figure's typical value over its
// repeats: Student's t over the logarithms of the values, taken back to
// the figure's scale, so it is never below zero and spreads as the figure
// does, by a factor (METRICS.md §8). A figure with a value of 0 has no
// logarithm: its interval is Student's t on the values themselves, with
// its lower bound held at 0, the least any of these figures can be. Both
// are NaN with fewer than two values.
func RepeatInterval(xs []float64) (lo, hi float64) {
	logs := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !(x > 0) {
			mean, half, _ := stats.MeanCI(xs)
			return max(0, mean-half), mean + half
		}
		logs = append(logs, math.Log(x))
	}
	m, half, _ := stats.MeanCI(logs)
	return math.Exp(m - half), math.Exp(m + half)
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
			mean, _, cv := stats.MeanCI(xs)
			lo, hi := RepeatInterval(xs)
			r.Figures = append(r.Figures, RepeatFigure{Name: f.name, Field: f.field, Values: xs, Mean: mean, Lo: finite(lo), Hi: finite(hi), CV: finite(cv)})
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

// levels are the figures the scaling verdict reads, one stage per level:
// each stage as it is when levels ran once, and with --repeat the first
// repeat's stage carrying the mean aggregate and mean decode tok/s over
// every repeat of its level and their finished requests summed, so the
// verdict rests on all repeats, not on the first.
func (r *Run) levels() []summary.Stage {
	if r.Repeats == nil {
		return r.Figures()
	}
	var out []summary.Stage
	for _, rep := range r.Repeats {
		var first *Stage
		ok := 0
		for i := range r.Stages {
			s := &r.Stages[i]
			if s.Key() != (StageKey{Concurrency: rep.Concurrency, Rate: rep.Rate}) {
				continue
			}
			if first == nil {
				first = s
			}
			ok += s.OK
		}
		if first == nil {
			continue
		}
		st := first.Stage
		st.OK = ok
		if f := rep.Figure("aggregate_tok_s"); f != nil {
			st.AggregateTokS = f.Mean
		}
		if f := rep.Figure("decode_tok_s_mean"); f != nil {
			st.DecodeTokS.Mean = f.Mean
		}
		out = append(out, st)
	}
	return out
}

// repeatCounts says how many repeats each level's means are over: "3 at
// each level", or "C=1 3, C=4 2" where they differ.
func repeatCounts(reps []Repeats) string {
	var parts []string
	same := true
	for _, r := range reps {
		parts = append(parts, fmt.Sprintf("%s %d", r.Label, r.N))
		same = same && r.N == reps[0].N
	}
	if same {
		return fmt.Sprintf("%d at each level", reps[0].N)
	}
	return strings.Join(parts, ", ")
}
