package analyze

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// A soak's slices carry the host's readings: a throughput step that came
// with the machine's CPU pressure falling (a neighbour that stopped) is
// the host's, not the server improving; the same slices with the pressure
// steady, or with no host readings (an old file), read improving.
func TestStabilityAttributesHostChange(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 36))
	slices := func(pressure func(i int) float64) []record.Slice {
		var out []record.Slice
		for i := range 40 {
			tokS := 100.0
			if i >= 20 {
				tokS = 120
			}
			tokS *= 1 + 0.02*rng.NormFloat64()
			s := record.Slice{Index: i, From: time.Duration(i) * time.Minute, To: time.Duration(i+1) * time.Minute, Requests: 50, OK: 50, AggregateTokS: tokS}
			if pressure != nil {
				s.Host = &record.Host{From: s.From, To: s.To, PressureS: 60 * pressure(i), Known: []string{"pressure"}}
			}
			out = append(out, s)
		}
		return out
	}
	v := Stability(slices(func(i int) float64 {
		if i >= 20 {
			return 0.05
		}
		return 0.6
	}), time.Minute)
	if v.Kind == "improving" || !strings.Contains(v.Text, "aggregate +20% at 20m with the host, not the server (CPU contended 60% → 5% of the time)") {
		t.Errorf("a step with the host's pressure: %s", v.Text)
	}
	for name, s := range map[string][]record.Slice{"steady pressure": slices(func(int) float64 { return 0.3 }), "no host readings": slices(nil)} {
		if v := Stability(s, time.Minute); v.Kind != "improving" || strings.Contains(v.Text, "with the host") {
			t.Errorf("%s: %s, want improving", name, v.Text)
		}
	}
}
