package stats

import (
	"math"
	"slices"
)

// QuantileCI is percentile p (nearest rank) of the values of blocks, and a
// 95% interval of it when the blocks, not the values, are the independent
// draws (a stage's time blocks, whose requests share the server's state).
// The interval is Woodruff's: the share of values at or below the
// estimate has a standard error taken over blocks (a ratio of sums, each
// block one draw), and the interval is the pooled values' quantiles at
// that share less and more t(B-1) errors. hi is +Inf where the share
// would pass 1: too few values to bound the percentile from above. Both
// ends are NaN with fewer than two blocks.
func QuantileCI(blocks [][]float64, p float64) (est, lo, hi float64) {
	var all []float64
	for _, b := range blocks {
		all = append(all, b...)
	}
	n := len(all)
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	slices.Sort(all)
	est = all[Rank(n, p)]
	var nonEmpty float64
	for _, b := range blocks {
		if len(b) > 0 {
			nonEmpty++
		}
	}
	if nonEmpty < 2 {
		return est, math.NaN(), math.NaN()
	}
	var below int
	for _, v := range all {
		if v <= est {
			below++
		}
	}
	share := float64(below) / float64(n)
	var ss float64
	for _, b := range blocks {
		k := 0
		for _, v := range b {
			if v <= est {
				k++
			}
		}
		d := float64(k) - share*float64(len(b))
		ss += d * d
	}
	se := math.Sqrt(ss*nonEmpty/(nonEmpty-1)) / float64(n)
	// A share's error is never less than one value's worth, so a stage
	// whose blocks all agree still gets an interval of a value or two.
	half := t975(nonEmpty-1) * max(se, 1/float64(n))
	// Each end is taken a rank outwards: the values are discrete, and
	// the nearest rank would pull both ends in by up to one value.
	lo = all[max(Rank(n, 100*(p/100-half))-1, 0)]
	hi = math.Inf(1)
	if k := Rank(n, 100*(p/100+half)) + 1; p/100+half <= 1 && k < n {
		hi = all[k]
	}
	return est, lo, hi
}
