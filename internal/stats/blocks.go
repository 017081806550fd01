package stats

import (
	"math"
	"slices"
)

// QuantileCI is percentile p (nearest rank) of the values of blocks, and a
// 95% interval of it when the blocks, not the values, are the independent
// draws (a stage's time blocks, whose requests share the server's state).
//
// The interval is the order statistics' (distribution-free) of an
// effective sample: the share of values at or below the estimate has a
// standard error taken over blocks (a ratio of sums, each block one
// draw), which against the binomial error of n independent values gives
// the design effect, and n over it is the effective sample m. The
// interval's ends are the ranks whose binomial probabilities over m put
// 2.5% below and above, placed on the pooled values. A tail percentile
// needs them: an interval of the normal approximation is short of 95% at
// p99 with a few hundred values. hi is +Inf where m is too small to bound
// the percentile from above (and lo -Inf from below); both are NaN with
// fewer than two blocks.
func QuantileCI(blocks [][]float64, p float64) (est, lo, hi float64) {
	var all []float64
	b := 0
	for _, bl := range blocks {
		all = append(all, bl...)
		if len(bl) > 0 {
			b++
		}
	}
	n := len(all)
	if n == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	slices.Sort(all)
	est = all[Rank(n, p)]
	if b < 2 {
		return est, math.NaN(), math.NaN()
	}
	q := p / 100
	m := effective(blocks, est, n, b)
	l, u := orderRanks(m, q)
	at := func(r int) float64 { // rank r of m, on the pooled values
		return all[min(max(int(math.Ceil(float64(r)/float64(m)*float64(n)))-1, 0), n-1)]
	}
	lo, hi = math.Inf(-1), math.Inf(1)
	if l >= 1 {
		lo = at(l)
	}
	if u <= m {
		hi = at(u)
	}
	return est, lo, hi
}

// effective is the effective sample size of n values in b non-empty
// blocks for the share at or below est: n over the design effect (at
// least 1: blocks that agree more than independent draws would are not
// taken as more than n), widened for the b blocks it is estimated from.
func effective(blocks [][]float64, est float64, n, b int) int {
	ks := make([]int, len(blocks))
	below := 0
	for i, bl := range blocks {
		for _, v := range bl {
			if v <= est {
				ks[i]++
			}
		}
		below += ks[i]
	}
	share := float64(below) / float64(n) // q, or more where values tie at est
	var ss float64
	for i, bl := range blocks {
		d := float64(ks[i]) - share*float64(len(bl))
		ss += d * d
	}
	varBlocks := ss * float64(b) / float64(b-1) / float64(n*n)
	varIID := share * (1 - share) / float64(n)
	deff := 1.0
	if varIID > 0 {
		deff = max(varBlocks/varIID, 1)
	}
	// The blocks' variance is itself estimated from b blocks: t's
	// quantile over the normal's widens the interval as t would.
	deff *= math.Pow(t975(float64(b-1))/1.959964, 2)
	return max(int(float64(n)/deff), 1)
}

// orderRanks are the ranks l and u (from 1) of a sample of m independent
// values such that [x(l), x(u)] holds its q-quantile with 95%
// probability: l the largest with P(Binomial(m, q) < l) ≤ 2.5%, u the
// smallest with P(Binomial(m, q) < u) ≥ 97.5%; l is 0 and u is m+1 where
// no rank of m does.
func orderRanks(m int, q float64) (l, u int) {
	cdf := 0.0 // P(X ≤ k-1), X ~ Binomial(m, q)
	l, u = 0, m+1
	lm := lgamma(float64(m + 1))
	for k := 0; k <= m; k++ {
		// Before adding P(X = k), cdf is P(X < k).
		if cdf <= 0.025 {
			l = k
		}
		if cdf >= 0.975 {
			u = k
			break
		}
		cdf += math.Exp(lm - lgamma(float64(k+1)) - lgamma(float64(m-k+1)) + float64(k)*math.Log(q) + float64(m-k)*math.Log1p(-q))
	}
	return l, u
}

func lgamma(x float64) float64 {
	v, _ := math.Lgamma(x)
	return v
}
