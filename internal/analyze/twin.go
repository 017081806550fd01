package analyze

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tokperf/tokperf/internal/record"
)

// TwinSchema names the JSON form of a Twin and its version.
const TwinSchema = "tokperf-twin/1"

// Twin is a digital twin fitted to a measured sweep: the simulator profile
// whose replay of the run's own requests matches its figures, how well it
// does at each measured level, which parameters the data pinned down, and
// its predictions at levels not run (docs/METRICS.md §10).
type Twin struct {
	Schema string `json:"schema"`
	File   string `json:"file"`
	Model  string `json:"model"`
	Engine string `json:"engine"`
	// Levels are the measured levels, each figure measured and replayed.
	Levels []TwinLevel `json:"levels"`
	Params []TwinParam `json:"params"`
	// Notes say what the fit assumed and what it could not pin down.
	Notes []string `json:"notes,omitempty"`
	// Profile is the fitted simulator profile (YAML), written to
	// ProfileFile when asked.
	Profile     string `json:"profile_yaml"`
	ProfileFile string `json:"profile_file,omitempty"`
	Evaluations int    `json:"evaluations"` // replays of the run the fit took
	// Shape is what the fitted step times say of their growth past the
	// largest fitted batch, where predictions beyond the run rest on it.
	Shape *TwinShape `json:"shape,omitempty"`
	// Predicted are the twin's figures at the levels asked for.
	Predicted []Predicted `json:"predicted,omitempty"`
	// SLO, when set, is what MaxConcurrency meets.
	SLO *TwinSLO `json:"slo,omitempty"`
	// Verdict, for a twin of a published table, is the table's own scaling
	// verdict, quoting the twin's prediction where it asks for more levels.
	Verdict string `json:"verdict,omitempty"`
	// Basis names the measured levels the twin was fitted to and, when one
	// of them was not measured validly, why its predictions are withheld:
	// the SLO's and the verdict's texts then say "not judged: …".
	Basis *Basis `json:"basis,omitempty"`
}

// TwinLevel is one measured level replayed by the twin.
type TwinLevel struct {
	Concurrency int          `json:"concurrency"`
	Requests    int          `json:"requests"`
	Figures     []TwinFigure `json:"figures"`
}

// TwinFigure is one figure measured and replayed; Error is twin/measured − 1.
type TwinFigure struct {
	Name     string  `json:"name"`
	Measured float64 `json:"measured"`
	Twin     float64 `json:"twin"`
	Error    float64 `json:"error"`
}

// TwinParam is one fitted parameter of the profile.
type TwinParam struct {
	Name  string  `json:"name"` // the profile's field
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
	// SE is its standard error from the figures' spread; RelSE the same
	// over the value (for a value near zero, over its unit's scale).
	SE     float64 `json:"se"`
	Pinned bool    `json:"pinned"`
	From   string  `json:"from"` // what in the data sets it
}

// TwinShape is the step time's growth past the largest fitted batch:
// whether the fit measured its curvature (Pinned), and the growths a
// prediction past the run is the envelope of, the first being its
// estimate's (docs/METRICS.md §10).
type TwinShape struct {
	FromBatch       int  `json:"from_batch"`       // the largest fitted batch (× verify width)
	FromConcurrency int  `json:"from_concurrency"` // the largest fitted level
	Pinned          bool `json:"pinned"`
	// Growths name the growths: straight (the fitted table's last
	// segment extended), power (a + k·B^p through the last three steps),
	// knee (compute-bound from the last batch: the step in proportion).
	Growths []string `json:"growths"`
	Text    string   `json:"text"`
}

// Estimate is a predicted figure with its interval (95%).
type Estimate struct {
	Value float64 `json:"value"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
}

// Covers says whether the interval holds x.
func (e Estimate) Covers(x float64) bool { return x >= e.Lo && x <= e.Hi }

// Predicted is the twin's figures at one level.
type Predicted struct {
	Concurrency int  `json:"concurrency"`
	Requests    int  `json:"requests"`
	Beyond      bool `json:"extrapolated"` // past the largest measured level
	// Figures, by the names of TwinFigure (aggregate tok/s, decode tok/s,
	// TTFT p50 ms, …) in order.
	Figures []PredictedFigure `json:"figures"`
	// Measured, when the level was then run (sweep --until-saturated),
	// is what it measured, figure by figure in the same order.
	Measured []float64 `json:"measured,omitempty"`
}

// PredictedFigure is one predicted figure.
type PredictedFigure struct {
	Name string `json:"name"`
	Estimate
	// Growths, past the largest fitted level, are the figure under each
	// growth of Twin.Shape, in its order: the interval is their envelope.
	Growths []float64 `json:"growths,omitempty"`
}

// Figure returns the predicted figure of that name.
func (p *Predicted) Figure(name string) (Estimate, bool) {
	for _, f := range p.Figures {
		if f.Name == name {
			return f.Estimate, true
		}
	}
	return Estimate{}, false
}

// TwinSLO is the highest concurrency the twin predicts to meet an SLO:
// at least 90% of requests within every objective (as --until-saturated
// stops).
type TwinSLO struct {
	SLO            record.SLO `json:"slo"`
	MaxConcurrency int        `json:"max_concurrency"` // 0: not even the lowest
	Searched       int        `json:"searched_to"`     // the highest level tried
	Text           string     `json:"text"`
}

// Predictable is the widest an interval may be, either side of its
// estimate, for the level to count as predicted: past it a verdict says
// the level cannot be predicted from the fitted levels and to measure it.
const Predictable = 0.25

// Wide says the interval reaches past ±Predictable of its estimate.
func (e Estimate) Wide() bool {
	return e.Hi > e.Value*(1+Predictable) || e.Lo < e.Value*(1-Predictable)
}

// Quote is the predictions as a verdict quotes them: "the twin fitted
// to these levels predicts C=48 2403 tok/s (2350–2460), C=64 …"; a level
// whose interval is Wide is named as one it cannot predict, and the
// lowest of them as the level to measure.
func Quote(ps []Predicted) string {
	var parts, wide []string
	first := 0 // the lowest level too wide to quote
	for _, p := range ps {
		e, ok := p.Figure("aggregate tok/s")
		switch {
		case !ok:
		case e.Wide():
			wide = append(wide, fmt.Sprintf("C=%d (%.0f–%.0f tok/s)", p.Concurrency, e.Lo, e.Hi))
			if first == 0 {
				first = p.Concurrency
			}
		default:
			parts = append(parts, fmt.Sprintf("C=%d %.0f tok/s (%.0f–%.0f)", p.Concurrency, e.Value, e.Lo, e.Hi))
		}
	}
	var out []string
	if len(parts) > 0 {
		out = append(out, "the twin fitted to these levels predicts "+strings.Join(parts, ", "))
	}
	if len(wide) > 0 {
		out = append(out, fmt.Sprintf("%s cannot be predicted from these levels (interval wider than ±%.0f%%): measure C=%d", strings.Join(wide, " and "), 100*Predictable, first))
	}
	return strings.Join(out, "; ")
}

// MarshalJSON writes a figure the level did not measure (a table's TTFT)
// as null.
func (f TwinFigure) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name     string   `json:"name"`
		Measured *float64 `json:"measured"`
		Twin     *float64 `json:"twin"`
		Error    *float64 `json:"error"`
	}{f.Name, finite(f.Measured), finite(f.Twin), finite(f.Error)})
}

// MarshalJSON writes an unbounded standard error as null.
func (p TwinParam) MarshalJSON() ([]byte, error) {
	type plain TwinParam
	return json.Marshal(struct {
		plain
		SE *float64 `json:"se"`
	}{plain(p), finite(p.SE)})
}

// MarshalJSON writes a figure a run level did not measure as null.
func (p Predicted) MarshalJSON() ([]byte, error) {
	type plain Predicted
	var m []*float64
	for _, v := range p.Measured {
		m = append(m, finite(v))
	}
	return json.Marshal(struct {
		plain
		Measured []*float64 `json:"measured,omitempty"`
	}{plain(p), m})
}
