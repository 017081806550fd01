package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// DescribeEach finds the same percentiles as sorting the whole sample,
// whether it holds the sample (small) or streams it (large, and every
// size with smallSample 0).
//
// Serial: it sets the package's smallSample.
func TestDescribeEachMatchesSorting(t *testing.T) {
	for _, small := range []int{smallSample, 0} {
		t.Run(fmt.Sprintf("smallSample=%d", small), func(t *testing.T) {
			defer func(was int) { smallSample = was }(smallSample)
			smallSample = small
			testDescribeEachMatchesSorting(t)
		})
	}
}

func testDescribeEachMatchesSorting(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	gens := map[string]func() float64{
		"gaps ms":   func() float64 { return float64(rng.IntN(5_000_000)) / 1e6 },
		"ties":      func() float64 { return float64(rng.IntN(3)) },
		"one value": func() float64 { return 1.25 },
		"signed":    func() float64 { return rng.NormFloat64() * 1e3 },
		"wide":      func() float64 { return math.Exp(rng.Float64()*80 - 40) },
		"zeros":     func() float64 { return float64(rng.IntN(2)) * rng.Float64() },
	}
	for name, gen := range gens {
		for _, c := range []struct {
			n        int
			weighted bool // else every value counts once, as most gaps do
		}{{1, false}, {2, true}, {3, false}, {3, true}, {10, true}, {999, false}, {999, true}, {20000, false}, {20000, true}, {70000, false}, {70000, true}} {
			n := c.n
			xs := make([]Weighted, n)
			for i := range xs {
				xs[i] = Weighted{V: gen(), W: 1}
				if c.weighted && rng.IntN(4) == 0 {
					xs[i].W = rng.IntN(6) // zero weights are skipped, as in DescribeWeighted
				}
			}
			got := DescribeEach(func(emit func(float64, int)) {
				for _, x := range xs {
					emit(x.V, x.W)
				}
			})
			want := DescribeWeighted(append([]Weighted(nil), xs...))
			if got.N != want.N || !sameFloat(got.P50, want.P50) || !sameFloat(got.P90, want.P90) || !sameFloat(got.P95, want.P95) || !sameFloat(got.P99, want.P99) || !sameFloat(got.Max, want.Max) ||
				math.Abs(got.Mean-want.Mean) > 1e-9*math.Max(1, math.Abs(want.Mean)) && !(math.IsNaN(got.Mean) && math.IsNaN(want.Mean)) {
				t.Errorf("%s, n=%d, weighted %v: got %+v, want %+v", name, n, c.weighted, got, want)
			}
		}
	}
}

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

func TestDescribeEachEmpty(t *testing.T) {
	t.Parallel()
	d := DescribeEach(func(func(float64, int)) {})
	if d.N != 0 || !math.IsNaN(d.P50) {
		t.Errorf("empty: %+v", d)
	}
}

// BenchmarkDescribeEach summarises a million gaps without holding them.
func BenchmarkDescribeEach(b *testing.B) {
	xs := make([]float64, 1_000_000)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range xs {
		xs[i] = float64(1_000_000+rng.IntN(500_000)) / 1e6
	}
	b.ReportAllocs()
	for b.Loop() {
		DescribeEach(func(emit func(float64, int)) {
			for _, x := range xs {
				emit(x, 1)
			}
		})
	}
}

// BenchmarkDescribeEachStage summarises one stage's gaps (32 streams, 352
// requests of 50 tokens): the size of every stage of a short run.
func BenchmarkDescribeEachStage(b *testing.B) {
	xs := make([]float64, 352*49)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range xs {
		xs[i] = float64(1_000_000+rng.IntN(500_000)) / 1e6
	}
	b.ReportAllocs()
	for b.Loop() {
		DescribeEach(func(emit func(float64, int)) {
			for _, x := range xs {
				emit(x, 1)
			}
		})
	}
}

// A stage's worth of gaps is held and sorted, not streamed through 2 MB of
// histograms: a short stage's figures cost it little.
//
// Serial: it reads the process's allocations.
func TestDescribeEachSmallHoldsLittle(t *testing.T) {
	xs := make([]float64, 20000)
	for i := range xs {
		xs[i] = float64(i%977) / 1e3
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	DescribeEach(func(emit func(float64, int)) {
		for _, x := range xs {
			emit(x, 1)
		}
	})
	runtime.ReadMemStats(&m1)
	if got := m1.TotalAlloc - m0.TotalAlloc; got > 512<<10 {
		t.Errorf("20,000 values took %d KB, want under 512 KB", got>>10)
	}
}
