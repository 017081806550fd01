package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestNearestRank(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		n    int
		p    float64
		want int
	}{
		{"p50 of 4 is the 2nd", 4, 50, 1},
		{"p99 of 4 is the max", 4, 99, 3},
		{"p50 of 5 is the 3rd", 5, 50, 2},
		{"p90 of 10 is the 9th", 10, 90, 8},
		{"p99 of 100 is the 99th", 100, 99, 98},
		{"p0 is the min", 7, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Rank(tc.n, tc.p); got != tc.want {
				t.Errorf("Rank(%d, %v) = %d, want %d", tc.n, tc.p, got, tc.want)
			}
		})
	}
}

// The weighted form must equal the plain form over the expanded sample.
func TestWeightedMatchesExpanded(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		var ws []Weighted
		var flat []float64
		for range 1 + r.IntN(40) {
			v, w := math.Round(r.Float64()*100)/10, r.IntN(4)
			ws = append(ws, Weighted{v, w})
			for range w {
				flat = append(flat, v)
			}
		}
		got, want := DescribeWeighted(ws), Describe(flat)
		if got.N != want.N || (want.N > 0 && (got.P50 != want.P50 || got.P90 != want.P90 || got.P99 != want.P99 || got.Max != want.Max || math.Abs(got.Mean-want.Mean) > 1e-9)) {
			t.Fatalf("trial %d: weighted %+v, expanded %+v", trial, got, want)
		}
	}
}

func TestEmpty(t *testing.T) {
	t.Parallel()
	if d := Describe(nil); d.N != 0 || !math.IsNaN(d.P50) {
		t.Errorf("Describe(nil) = %+v", d)
	}
}

func BenchmarkDescribe1M(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]float64, 1_000_000)
	for i := range src {
		src[i] = r.ExpFloat64()
	}
	xs := make([]float64, len(src))
	for b.Loop() {
		copy(xs, src)
		Describe(xs)
	}
}

func TestT975(t *testing.T) {
	t.Parallel()
	// Published values of Student's t, 97.5% quantile.
	for df, want := range map[float64]float64{3: 3.182, 5: 2.571, 10: 2.228, 30: 2.042, 120: 1.980} {
		if got := t975(df); math.Abs(got/want-1) > 0.005 {
			t.Errorf("t975(%v) = %.4f, want %.3f", df, got, want)
		}
	}
}

func TestMeanDiff(t *testing.T) {
	t.Parallel()
	a := []float64{10, 11, 9, 10, 10}
	b := []float64{15, 16, 14, 15, 15}
	d, h := MeanDiff(a, b)
	// Both variances are 0.5: se = sqrt(0.1+0.1), df = 8, t = 2.306.
	if d != 5 || math.Abs(h-2.306*math.Sqrt(0.2)) > 0.01 {
		t.Errorf("diff %v ± %v", d, h)
	}
	if _, h := MeanDiff([]float64{1}, b); !math.IsNaN(h) {
		t.Errorf("one sample: half width %v, want NaN", h)
	}
}

func TestMannWhitney(t *testing.T) {
	t.Parallel()
	// Fully separated samples of 8: U = 64, exact two-sided p = 2/C(16,8) = 0.00016.
	a := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	b := []float64{11, 12, 13, 14, 15, 16, 17, 18}
	u, p := MannWhitney(a, b)
	if u != 64 || p > 0.002 {
		t.Errorf("separated: U %v p %v", u, p)
	}
	// Interleaved samples: no difference.
	if _, p := MannWhitney([]float64{1, 3, 5, 7, 9, 11}, []float64{2, 4, 6, 8, 10, 12}); p < 0.5 {
		t.Errorf("interleaved: p %v", p)
	}
	// Swapping the samples gives the same p.
	_, p1 := MannWhitney(a, b)
	_, p2 := MannWhitney(b, a)
	if math.Abs(p1-p2) > 1e-12 {
		t.Errorf("p not symmetric: %v %v", p1, p2)
	}
	if _, p := MannWhitney([]float64{5, 5, 5}, []float64{5, 5}); p != 1 {
		t.Errorf("all tied: p %v", p)
	}
}

func TestRatioCI(t *testing.T) {
	t.Parallel()
	var a, b [][2]float64
	r := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		a = append(a, [2]float64{100, 1 + 0.1*r.NormFloat64()})
		b = append(b, [2]float64{200, 1 + 0.1*r.NormFloat64()})
	}
	lo, hi := RatioCI(a, b, 2000, 1)
	if !(lo < 2 && hi > 2 && lo > 1.85 && hi < 2.15) {
		t.Errorf("interval [%v, %v] should hold 2 and be tight", lo, hi)
	}
	lo, hi = RatioCI(a, a, 2000, 1)
	if !(lo < 1 && hi > 1) {
		t.Errorf("same sample: [%v, %v] should hold 1", lo, hi)
	}
}

func TestMeanCI(t *testing.T) {
	t.Parallel()
	mean, half, cv := MeanCI([]float64{9, 10, 11, 10, 10})
	// s = √(2/4) = 0.7071; t(4) = 2.776; half = 2.776 · 0.7071 / √5.
	if mean != 10 || math.Abs(half-2.776*math.Sqrt(0.5)/math.Sqrt(5)) > 1e-9 || math.Abs(cv-math.Sqrt(0.5)/10) > 1e-12 {
		t.Errorf("MeanCI = %v ± %v, CV %v", mean, half, cv)
	}
	if _, half, cv := MeanCI([]float64{3}); !math.IsNaN(half) || !math.IsNaN(cv) {
		t.Errorf("one value: half %v, CV %v, want NaN", half, cv)
	}
}

// Linear is numpy's np.percentile: values worked out with numpy.
func TestLinear(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		xs   []float64
		p    float64
		want float64
	}{
		{[]float64{1, 2, 3, 4}, 50, 2.5},
		{[]float64{15, 20, 35, 40, 50}, 90, 46},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 9.91},
		{[]float64{7}, 99, 7},
	} {
		if got := Linear(c.xs, c.p); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Linear(%v, %v) = %v, want %v", c.xs, c.p, got, c.want)
		}
	}
	if !math.IsNaN(Linear(nil, 50)) {
		t.Error("an empty sample has no percentile")
	}
}
