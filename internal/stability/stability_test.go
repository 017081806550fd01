package stability

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// slices of a minute over d, starting at 0.
func minutes(d time.Duration) []time.Duration {
	var at []time.Duration
	for t := time.Duration(0); t < d; t += time.Minute {
		at = append(at, t)
	}
	return at
}

// series of f(hours at the slice's middle) with relative noise rel.
func series(at []time.Duration, rng *rand.Rand, rel float64, f func(h float64) float64) []float64 {
	y := make([]float64, len(at))
	for i, t := range at {
		v := f((t + 30*time.Second).Hours())
		y[i] = v * (1 + rel*rng.NormFloat64())
	}
	return y
}

func find(t *testing.T, v Verdict, field string) Figure {
	t.Helper()
	for _, f := range v.Figures {
		if f.Field == field {
			return f
		}
	}
	t.Fatalf("no figure %s in %+v", field, v)
	return Figure{}
}

func TestTheilSenIgnoresOutliers(t *testing.T) {
	t.Parallel()
	x := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	y := []float64{1, 3, 5, 7, 100, 11, 13, 15, -50, 19}
	tr := TheilSen(x, y)
	if tr.Slope != 2 || tr.Intercept != 1 {
		t.Errorf("slope %v intercept %v, want 2 and 1 despite two outliers", tr.Slope, tr.Intercept)
	}
	if !(tr.Lo <= 2 && tr.Hi >= 2 && tr.Lo < tr.Hi) {
		t.Errorf("interval [%v, %v] does not hold 2", tr.Lo, tr.Hi)
	}
}

func TestDriftFound(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	at := minutes(2 * time.Hour)
	v := Judge(Input{Slice: time.Minute, At: at, Warmup: -1, Series: []Series{
		{Name: "aggregate", Field: "aggregate_tok_s", Unit: TokS, Values: series(at, rng, 0.02, func(h float64) float64 { return 1000 * (1 - 0.1*h) })},
		{Name: "TPOT", Field: "tpot_p50_ms", Unit: Ms, Values: series(at, rng, 0.02, func(h float64) float64 { return 10 * (1 + 0.1*h) })},
	}})
	if v.Kind != "degrading" {
		t.Fatalf("%s", v.Text)
	}
	agg, tpot := find(t, v, "aggregate_tok_s"), find(t, v, "tpot_p50_ms")
	// Relative to the level at the first measured slice (~minute 6).
	level := 1 - 0.1*(6.5/60) // the first measured slice, after 6 of warm-up
	if want := -10 / level; agg.State != "drift" || math.Abs(agg.PctPerH-want) > 1 || !(agg.PctPerHLo < agg.PctPerH && agg.PctPerHHi > agg.PctPerH) {
		t.Errorf("aggregate %+v, want drift %.1f %%/h", agg, want)
	}
	if want := 10 / (1 + 0.1*(6.5/60)); tpot.State != "drift" || math.Abs(tpot.PctPerH-want) > 1 || !tpot.Worse {
		t.Errorf("TPOT %+v, want drift +%.1f %%/h, worse", tpot, want)
	}
	// The move over the 1h53m measured (its size is checked above).
	if !strings.HasPrefix(v.Text, "degrading: aggregate -") || !strings.Contains(v.Text, "% over 1h53m [") || !strings.Contains(v.Text, "6 warm-up slices left out") {
		t.Errorf("text %q", v.Text)
	}
}

func TestShiftLocated(t *testing.T) {
	t.Parallel()
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 3))
		at := minutes(90 * time.Minute)
		ttft := series(at, rng, 0.08, func(h float64) float64 {
			if h*60 >= 35 {
				return 1710
			}
			return 1210
		})
		v := Judge(Input{Slice: time.Minute, At: at, Warmup: 2, Series: []Series{{Name: "p99 TTFT", Field: "ttft_p99_ms", Unit: Ms, Values: ttft}}})
		f := find(t, v, "ttft_p99_ms")
		if f.State != "shift" || len(f.Changes) == 0 {
			t.Fatalf("seed %d: %s", seed, v.Text)
		}
		c := f.biggest()
		if c.Slice < 34 || c.Slice > 36 || math.Abs(c.Pct-41.3) > 6 {
			t.Errorf("seed %d: change %+v, want slice 35, +41%%", seed, c)
		}
		if !strings.Contains(v.Text, "% at 3") || !strings.Contains(v.Text, "(change point, 1.") {
			t.Errorf("text %q", v.Text)
		}
	}
}

func TestMemoryGrowth(t *testing.T) {
	t.Parallel()
	at := minutes(2 * time.Hour)
	rng := rand.New(rand.NewPCG(5, 5))
	leak := series(at, rng, 0.001, func(h float64) float64 { return 4e9 + 1e9*h })
	flat := series(at, rng, 0.001, func(h float64) float64 { return 4e9 })
	v := Judge(Input{Slice: time.Minute, At: at, Warmup: -1, Series: []Series{{Name: "server memory", Field: "resident_bytes", Unit: Bytes, Values: leak}}})
	if f := find(t, v, "resident_bytes"); v.Kind != "degrading" || f.State != "growth" || math.Abs(f.PerH-1e9) > 0.05e9 {
		t.Errorf("leak: %s (%+v)", v.Text, f)
	}
	// 1 GB/h over the 1h53m between the first measured slice's middle and
	// the last's, said as the move in one unit.
	if !strings.Contains(v.Text, "server memory +1.88 GB over 1h53m [1.8") {
		t.Errorf("text %q", v.Text)
	}
	v = Judge(Input{Slice: time.Minute, At: at, Warmup: -1, Series: []Series{{Name: "server memory", Field: "resident_bytes", Unit: Bytes, Values: flat}}})
	if v.Kind != "stable" || !strings.Contains(v.Text, "server memory flat") {
		t.Errorf("flat: %s", v.Text)
	}
}

// Steady series, Gaussian and heavy-tailed (a p99 of a few dozen
// requests), are called stable at least 95% of the time.
func TestSteadyRunsAreStable(t *testing.T) {
	t.Parallel()
	const runs = 400
	alarms := 0
	byField := map[string]int{}
	for seed := range uint64(runs) {
		rng := rand.New(rand.NewPCG(seed, 7))
		at := minutes(time.Duration(10+seed%110) * time.Minute)
		heavy := make([]float64, len(at))
		for i := range heavy {
			heavy[i] = 1200 * math.Exp(0.15*rng.NormFloat64())
		}
		v := Judge(Input{Slice: time.Minute, At: at, Warmup: -1, Series: []Series{
			{Name: "aggregate", Field: "aggregate_tok_s", Unit: TokS, Values: series(at, rng, 0.02, func(float64) float64 { return 2000 })},
			{Name: "p99 TTFT", Field: "ttft_p99_ms", Unit: Ms, Values: heavy},
			{Name: "p99 ITL", Field: "itl_p99_ms", Unit: Ms, Values: series(at, rng, 0.05, func(float64) float64 { return 20 })},
			{Name: "TPOT", Field: "tpot_p50_ms", Unit: Ms, Values: series(at, rng, 0.01, func(float64) float64 { return 12 })},
			{Name: "server memory", Field: "resident_bytes", Unit: Bytes, Values: series(at, rng, 0.0005, func(float64) float64 { return 4e9 })},
		}})
		if v.Kind != "stable" {
			for _, f := range v.Figures {
				if f.State != "flat" {
					byField[f.Field+"/"+f.State]++
				}
			}
			alarms++
			if alarms <= 3 {
				t.Logf("seed %d: %s", seed, v.Text)
			}
		}
	}
	t.Logf("false alarms: %d of %d %v", alarms, runs, byField)
	if alarms > runs/20 {
		t.Errorf("%d of %d steady runs were not called stable", alarms, runs)
	}
}

func TestTooShort(t *testing.T) {
	t.Parallel()
	at := minutes(5 * time.Minute)
	v := Judge(Input{Slice: time.Minute, At: at, Warmup: -1, Series: []Series{{Name: "aggregate", Field: "aggregate_tok_s", Unit: TokS, Values: []float64{1, 2, 3, 4, 5}}}})
	if v.Kind != "too_short" || !strings.Contains(v.Text, "4 measured slices (1 warm-up slice left out)") {
		t.Errorf("%+v", v)
	}
}

func TestShortSlicesLeftOut(t *testing.T) {
	t.Parallel()
	at := minutes(20 * time.Minute)
	lens := make([]time.Duration, len(at))
	y := make([]float64, len(at))
	for i := range at {
		lens[i], y[i] = time.Minute, 100+float64(i%2)
	}
	lens[len(at)-1], y[len(at)-1] = 10*time.Second, 10 // the stage ended early in it
	v := Judge(Input{Slice: time.Minute, At: at, Len: lens, Warmup: -1, Series: []Series{{Name: "aggregate", Field: "aggregate_tok_s", Unit: TokS, Values: y}}})
	if v.Kind != "stable" || v.Short != 1 || v.Measured != 18 || !strings.Contains(v.Text, "1 cut short") {
		t.Errorf("%s (%+v)", v.Text, v)
	}
}
