package stats

import (
	"math"
	"math/rand/v2"
	"sort"
)

// MannWhitney is the two-sided Mann–Whitney U test of whether b tends to be
// larger or smaller than a: it returns U for b and the p-value from the
// normal approximation with tie and continuity corrections (fit for the
// sample sizes of a benchmark stage, a handful or more on each side).
func MannWhitney(a, b []float64) (u, p float64) {
	na, nb := len(a), len(b)
	if na == 0 || nb == 0 {
		return math.NaN(), math.NaN()
	}
	type obs struct {
		v   float64
		isB bool
	}
	all := make([]obs, 0, na+nb)
	for _, v := range a {
		all = append(all, obs{v, false})
	}
	for _, v := range b {
		all = append(all, obs{v, true})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	rankB, ties := 0.0, 0.0
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // average of ranks i+1..j
		t := float64(j - i)
		ties += t*t*t - t
		for k := i; k < j; k++ {
			if all[k].isB {
				rankB += rank
			}
		}
		i = j
	}
	n1, n2, n := float64(na), float64(nb), float64(na+nb)
	u = rankB - n2*(n2+1)/2
	mean := n1 * n2 / 2
	variance := n1 * n2 / 12 * ((n + 1) - ties/(n*(n-1)))
	if variance <= 0 {
		return u, 1 // every value tied
	}
	z := (math.Abs(u-mean) - 0.5) / math.Sqrt(variance)
	if z < 0 {
		z = 0
	}
	return u, math.Erfc(z / math.Sqrt2)
}

// RatioCI is a bootstrap 95% interval of est(b)/est(a) where est is the
// ratio of sums Σx/Σy over a sample of (x, y) pairs, such as tokens over
// seconds; reps resamples from a seeded source.
func RatioCI(a, b [][2]float64, reps int, seed uint64) (lo, hi float64) {
	if len(a) == 0 || len(b) == 0 {
		return math.NaN(), math.NaN()
	}
	r := rand.New(rand.NewPCG(seed, 0xb007))
	est := func(s [][2]float64) float64 {
		var x, y float64
		for range s {
			p := s[r.IntN(len(s))]
			x += p[0]
			y += p[1]
		}
		return x / y
	}
	ratios := make([]float64, reps)
	for i := range ratios {
		ratios[i] = est(b) / est(a)
	}
	sort.Float64s(ratios)
	return ratios[Rank(reps, 2.5)], ratios[Rank(reps, 97.5)]
}
