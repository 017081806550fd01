package bench

import (
	"strings"
	"testing"
	"time"
)

// Steps growing 5% of the profile's time a minute (a smooth, fast drift)
// over 20 simulated minutes: every figure drifts, none is cut into change
// points, TPOT's trend holds the truth in its interval, and the verdict
// reads per minute.
func TestSoakDriftPerMinute(t *testing.T) {
	run := soak(t, soakProfile(t, t.TempDir(), 1, "  step_growth_pct_per_min: 5\n"), 20*time.Minute, 1, nil)
	v := run.Stages[0].Stability
	t.Log(v.Text)
	for _, f := range v.Figures {
		if f.State != "drift" || len(f.Changes) > 0 {
			t.Errorf("%s: %s with %d change points, want a drift", f.Name, f.State, len(f.Changes))
		}
	}
	// TPOT grows by 5% of the profile's step a minute: in % of its level
	// at the first measured slice's middle, 5 / (1 + 0.05·m₀).
	m0 := (time.Duration(v.Warmup)*time.Minute + 30*time.Second).Minutes()
	want := 5 / (1 + 0.05*m0)
	if f := figure(t, v, "tpot_p50_ms"); !(f.PctPerHLo/60 <= want && want <= f.PctPerHHi/60) {
		t.Errorf("TPOT %+.2f %%/min [%+.2f, %+.2f], want %.2f inside", f.PctPerH/60, f.PctPerHLo/60, f.PctPerHHi/60, want)
	}
	if f := figure(t, v, "aggregate_tok_s"); !f.Worse || !strings.Contains(v.Text, "aggregate -") || !strings.Contains(v.Text, " %/min [") {
		t.Errorf("aggregate %+v: %s", f, v.Text)
	}
	if !strings.Contains(v.Text, "server memory not read") {
		t.Errorf("memory not read is not said: %s", v.Text)
	}
}
