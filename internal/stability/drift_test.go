package stability

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// A throughput that falls smoothly, by a share a minute (a server warming
// up or throttling), is a drift: no change points, over many seeds, rates,
// noises and lengths. Against a straight line alone the bend passed for a
// staircase in 18 of these 320 runs.
func TestSmoothDriftIsADrift(t *testing.T) {
	t.Parallel()
	runs, stepped := 0, 0
	for _, rate := range []float64{0.2, 0.5, 1, 2} { // % a minute
		for _, rel := range []float64{0.01, 0.03} {
			for _, d := range []time.Duration{20 * time.Minute, time.Hour} {
				for seed := range uint64(20) {
					rng := rand.New(rand.NewPCG(seed, 11))
					at := minutes(d)
					y := series(at, rng, rel, func(h float64) float64 { return 1000 * math.Pow(1-rate/100, 60*h) })
					v := Judge(Input{Slice: time.Minute, At: at, Warmup: -1, Series: []Series{{Name: "aggregate", Field: "aggregate_tok_s", Unit: TokS, Values: y}}})
					runs++
					if f := v.Figures[0]; f.State == "shift" || len(f.Changes) > 0 {
						stepped++
						t.Logf("%.1f %%/min, noise %.2f, %v, seed %d: %s", rate, rel, d, seed, v.Text)
					}
				}
			}
		}
	}
	t.Logf("%d of %d smooth drifts were given change points", stepped, runs)
	if stepped > runs/100 {
		t.Errorf("%d of %d smooth drifts were given change points, want at most 1%%", stepped, runs)
	}
}

// A throughput falling 2.5% a minute reads as its move over the span
// measured, in one unit (not a rate per minute or hour); the trend is the
// truth's within its interval.
func TestFastDriftReadsAsItsMove(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	at := minutes(30 * time.Minute)
	y := series(at, rng, 0.01, func(h float64) float64 { return 1000 * (1 - 0.05*60*h/2) }) // −2.5% of the start a minute
	v := Judge(Input{Slice: time.Minute, At: at, Warmup: -1, Series: []Series{{Name: "aggregate", Field: "aggregate_tok_s", Unit: TokS, Values: y}}})
	f := find(t, v, "aggregate_tok_s")
	// In % of the line's level at the first measured slice (2 of warm-up).
	want := -2.5 / (1 - 0.025*2.5)
	if f.State != "drift" || !(f.PctPerHLo/60 <= want && want <= f.PctPerHHi/60) {
		t.Errorf("%s: want a drift near %.2f %%/min", v.Text, want)
	}
	if move := want * f.SpanS / 60; !strings.Contains(v.Text, fmt.Sprintf("aggregate %+.0f%% over 27m [", move)) {
		t.Errorf("text %q, want the move over the 27m measured, %+.0f%%", v.Text, move)
	}
}

// A change point is printed at its time, to the second: a shift at 1m30s
// in slices of 30 s is not "minute 2".
func TestChangePointAtItsTime(t *testing.T) {
	t.Parallel()
	var at []time.Duration
	var y []float64
	for i := range 40 {
		at = append(at, time.Duration(i)*30*time.Second)
		v := 100.0
		if i >= 23 { // 11m30s
			v = 150
		}
		y = append(y, v+float64(i%3))
	}
	v := Judge(Input{Slice: 30 * time.Second, At: at, Warmup: 1, Series: []Series{{Name: "p99 TTFT", Field: "ttft_p99_ms", Unit: Ms, Values: y}}})
	if !strings.Contains(v.Text, "p99 TTFT +50% at 11m30s (change point, 101.0 ms → 151.0 ms)") {
		t.Errorf("text %q", v.Text)
	}
}

func TestAt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{45 * time.Second, "45s"}, {90 * time.Second, "1m30s"}, {35 * time.Minute, "35m"}, {65 * time.Minute, "1h05m"},
		{65*time.Minute + 30*time.Second, "1h05m30s"}, {0, "0s"}, {89*time.Second + 600*time.Millisecond, "1m30s"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := At(tc.d); got != tc.want {
				t.Errorf("At(%v) = %q, want %q", tc.d, got, tc.want)
			}
		})
	}
}

// What was not read is said, not left out: a soak with no memory figure
// must not read as one without a leak.
func TestUnreadIsSaid(t *testing.T) {
	t.Parallel()
	at := minutes(20 * time.Minute)
	y := make([]float64, len(at))
	for i := range y {
		y[i] = 100 + float64(i%2)
	}
	v := Judge(Input{Slice: time.Minute, At: at, Warmup: -1, Unread: []string{"server memory not read (x): a leak would not show"},
		Series: []Series{{Name: "aggregate", Field: "aggregate_tok_s", Unit: TokS, Values: y}}})
	if v.Kind != "stable" || !strings.Contains(v.Text, "; server memory not read (x): a leak would not show (19 slices") || len(v.Unread) != 1 {
		t.Errorf("%s (%+v)", v.Text, v.Unread)
	}
}

// Stable is a finding, not the absence of one: a soak of seconds whose
// per-slice aggregate swings ±30% cannot rule out a drift of 15% over its
// span, so it is too short to judge, not stable; the same level held
// steady over the same slices is stable.
func TestStableNeedsANarrowInterval(t *testing.T) {
	t.Parallel()
	var at []time.Duration
	for i := range 7 {
		at = append(at, time.Duration(i)*3*time.Second)
	}
	judge := func(y []float64) Verdict {
		return Judge(Input{Slice: 3 * time.Second, At: at, Warmup: 1, Series: []Series{{Name: "aggregate", Field: "aggregate_tok_s", Unit: TokS, Values: y}}})
	}
	v := judge([]float64{100, 130, 70, 125, 80, 135, 75})
	if v.Kind != "too_short" || !strings.Contains(v.Text, "aggregate could have moved") || !strings.Contains(v.Text, "within ±15%") {
		t.Errorf("a swinging 18 s soak: %s %q, want too_short with the interval's reach", v.Kind, v.Text)
	}
	if v := judge([]float64{100, 100, 101, 100, 99, 100, 100}); v.Kind != "stable" {
		t.Errorf("a steady 18 s soak: %s %q, want stable", v.Kind, v.Text)
	}
}
