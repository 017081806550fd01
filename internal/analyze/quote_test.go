package analyze

import (
	"strings"
	"testing"
)

// A level whose interval reaches past ±25% of its estimate is not quoted
// as a number: the verdict says it cannot be predicted from the fitted
// levels and which level to measure.
func TestQuoteNamesWhatCannotBePredicted(t *testing.T) {
	t.Parallel()
	at := func(c int, v, lo, hi float64) Predicted {
		return Predicted{Concurrency: c, Figures: []PredictedFigure{{Name: "aggregate tok/s", Estimate: Estimate{Value: v, Lo: lo, Hi: hi}}}}
	}
	for _, tc := range []struct {
		ps        []Predicted
		want, not []string
	}{
		{[]Predicted{at(48, 2000, 1900, 2100), at(64, 2400, 2200, 2600)},
			[]string{"predicts C=48 2000 tok/s (1900–2100), C=64 2400 tok/s (2200–2600)"}, []string{"cannot"}},
		{[]Predicted{at(48, 2000, 1900, 2100), at(64, 2400, 1500, 2600)},
			[]string{"predicts C=48 2000 tok/s (1900–2100)", "C=64 (1500–2600 tok/s) cannot be predicted from these levels (interval wider than ±25%): measure C=64"}, []string{"C=64 2400"}},
		{[]Predicted{at(48, 2000, 1400, 2100), at(64, 2400, 1500, 3100)},
			[]string{"C=48 (1400–2100 tok/s) and C=64 (1500–3100 tok/s) cannot be predicted", "measure C=48"}, []string{"predicts"}},
	} {
		q := Quote(tc.ps)
		for _, w := range tc.want {
			if !strings.Contains(q, w) {
				t.Errorf("%q lacks %q", q, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(q, w) {
				t.Errorf("%q has %q", q, w)
			}
		}
	}
}
