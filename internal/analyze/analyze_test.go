package analyze

import (
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/summary"
)

func stagesOf(aggs map[int]float64, order ...int) []summary.Stage {
	var out []summary.Stage
	for _, c := range order {
		out = append(out, summary.Stage{Concurrency: c, OK: 1, AggregateTokS: aggs[c]})
	}
	return out
}

func TestScaling(t *testing.T) {
	for _, tc := range []struct {
		name string
		aggs map[int]float64
		kind string
		text string
	}{
		{"the seed: still rising", map[int]float64{16: 1646.7, 32: 2156.4}, "rising", "aggregate +31% from C=16 to C=32 (1646.7 → 2156.4 tok/s, +31% per doubling) — still rising, not saturated: try C=48 and C=64"},
		{"flat", map[int]float64{16: 2000, 32: 2100}, "saturated", "saturated"},
		{"fell", map[int]float64{16: 2000, 32: 1800}, "past_peak", "past the peak: C=16"},
		{"per doubling over a long step", map[int]float64{4: 1000, 32: 1300}, "saturated", "+9% per doubling"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cs []int
			for c := range tc.aggs {
				cs = append(cs, c)
			}
			if cs[0] > cs[1] {
				cs[0], cs[1] = cs[1], cs[0]
			}
			v := Scaling(stagesOf(tc.aggs, cs...))
			if v.Kind != tc.kind || !strings.Contains(v.Text, tc.text) {
				t.Errorf("got %s: %q", v.Kind, v.Text)
			}
		})
	}
}
