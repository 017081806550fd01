package analyze

import (
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/summary"
)

// "Saturated" names the level past which each doubling gained under 10%,
// and how much remains above it; where the curve bends is another
// statement. A server whose step is 2 + 0.5·B ms bends early (C≈4) but
// still gains +88% from C=4 to C=64: it is saturated at C=32, not near 4.
func TestSaturatedNamesWhereGainsStop(t *testing.T) {
	t.Parallel()
	v := Scaling(sweep([]int{1, 4, 16, 32, 64}, func(c int) float64 { return 1000 * float64(c) / (2 + 0.5*float64(c)) }))
	if v.Kind != "saturated" || v.Saturated != 32 {
		t.Fatalf("kind %s at C=%d, want saturated at C=32: %s", v.Kind, v.Saturated, v.Text)
	}
	for _, want := range []string{"saturated at C=32 (each doubling past it gained under 10%; +6% remains above it (C=64"} {
		if !strings.Contains(v.Text, want) {
			t.Errorf("%q lacks %q", v.Text, want)
		}
	}
	if strings.Contains(v.Text, "saturated near") || strings.Contains(v.Text, "saturated at C=4") {
		t.Errorf("saturation read at the bend: %s", v.Text)
	}
}

// A server that states or shows a cap of N running requests is saturated
// at N once a level reaches it, and a rising verdict below it suggests no
// level past it.
func TestCapEndsTheSearch(t *testing.T) {
	t.Parallel()
	slots := Cap{N: 4, From: "/props total_slots"}
	lin := func(c int) float64 { return 100 * float64(min(c, 4)) }
	v := ScalingCapped(sweep([]int{1, 2, 4}, lin), slots)
	if v.Kind != "saturated" || v.Saturated != 4 || !strings.Contains(v.Text, "saturated at C=4, the server's cap: it runs at most 4 requests (/props total_slots)") {
		t.Errorf("at the cap: %s %d %q", v.Kind, v.Saturated, v.Text)
	}
	v = ScalingCapped(sweep([]int{1, 2, 4, 16}, lin), slots)
	if v.Kind != "saturated" || strings.Contains(v.Text, "try C=") || strings.Contains(v.Text, "peak") {
		t.Errorf("past the cap: %s %q", v.Kind, v.Text)
	}
	v = ScalingCapped(sweep([]int{1, 2}, lin), Cap{N: 3, From: "/props total_slots"})
	if v.Kind != "rising" || !strings.Contains(v.Text, "try C=3, the server's cap") {
		t.Errorf("below the cap: %s %q", v.Kind, v.Text)
	}
}

// A peak is a peak only when it beats the noise between the levels (their
// time blocks'): a +20% bump of a level whose blocks scatter ±15% is not.
func TestPeakBeatsTheNoise(t *testing.T) {
	t.Parallel()
	at := func(spread float64) []summary.Stage {
		st := sweep([]int{4, 16, 64}, func(c int) float64 { return map[int]float64{4: 300, 16: 480, 64: 400}[c] })
		for i := range st {
			st[i].AggregateSpread = spread
		}
		return st
	}
	v := Scaling(at(0.15))
	if v.Kind != "saturated" || !strings.Contains(v.Text, "C=16 read +20% above C=64, within the noise between the levels (±42% at 95%, from time blocks): not a peak") {
		t.Errorf("a noisy bump: %s %q", v.Kind, v.Text)
	}
	v = Scaling(at(0.02))
	if v.Kind != "past_peak" || !strings.Contains(v.Text, "the peak was C=16 (480.0 tok/s, +20% above C=64, beyond the noise between the levels of ±6% (95%, from time blocks))") {
		t.Errorf("a clear peak: %s %q", v.Kind, v.Text)
	}
}
