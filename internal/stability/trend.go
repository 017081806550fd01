package stability

import (
	"math"
	"slices"
)

// Trend is a robust straight line through a series: the Theil–Sen slope
// (the median of the slopes between every pair of points), its 95%
// interval (Sen's, from Kendall's S), and the intercept (the median of
// y − slope·x).
type Trend struct {
	Slope, Lo, Hi float64 // per unit of x
	Intercept     float64
}

// TheilSen fits y against x with a 95% interval; x need not be evenly
// spaced. It needs two points with different x; otherwise every figure is
// NaN.
func TheilSen(x, y []float64) Trend { return TheilSenZ(x, y, 1.959964) }

// TheilSenZ is TheilSen with the interval of the normal quantile z
// (2.576 for 99%).
func TheilSenZ(x, y []float64, z float64) Trend {
	t, _ := theilSen(x, y, z, z)
	return t
}

// theilSen fits y against x once, with the intervals of two quantiles.
func theilSen(x, y []float64, z1, z2 float64) (Trend, Trend) {
	n := len(x)
	slopes := make([]float64, 0, n*(n-1)/2)
	for i := range n {
		for j := i + 1; j < n; j++ {
			if dx := x[j] - x[i]; dx != 0 {
				slopes = append(slopes, (y[j]-y[i])/dx)
			}
		}
	}
	nan := math.NaN()
	if len(slopes) == 0 {
		return Trend{nan, nan, nan, nan}, Trend{nan, nan, nan, nan}
	}
	slices.Sort(slopes)
	t := Trend{Slope: median(slopes)}
	res := make([]float64, n)
	for i := range n {
		res[i] = y[i] - t.Slope*x[i]
	}
	slices.Sort(res)
	t.Intercept = median(res)
	// Sen (1968): the interval's ends are the slopes ranked (N ∓ C)/2 with
	// C = z·√Var(S), Var(S) = n(n−1)(2n+5)/18 (no ties).
	interval := func(z float64) Trend {
		N := float64(len(slopes))
		c := z * math.Sqrt(float64(n*(n-1)*(2*n+5))/18)
		lo := int(math.Floor((N - c) / 2))
		hi := int(math.Ceil((N + c) / 2))
		out := t
		out.Lo, out.Hi = slopes[min(max(lo, 0), len(slopes)-1)], slopes[min(max(hi, 0), len(slopes)-1)]
		return out
	}
	return interval(z1), interval(z2)
}

// At is the line's value at x.
func (t Trend) At(x float64) float64 { return t.Intercept + t.Slope*x }

// median of sorted xs.
func median(xs []float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// sortedMedian is the median of xs, which it does not change.
func sortedMedian(xs []float64) float64 {
	return median(slices.Sorted(slices.Values(xs)))
}

// noise is a robust estimate of the standard deviation of the noise about
// a series' level: the median absolute first difference, scaled to a
// normal's σ. Differences cancel a trend and leave a step as one outlier,
// so neither inflates it.
func noise(y []float64) float64 {
	if len(y) < 3 {
		return math.NaN()
	}
	d := make([]float64, len(y)-1)
	for i := range d {
		d[i] = y[i+1] - y[i]
	}
	m := sortedMedian(d)
	dev := make([]float64, len(d))
	for i := range d {
		dev[i] = math.Abs(d[i] - m)
	}
	// MAD × 1.4826 is σ of a difference; a difference has √2 σ.
	if s := 1.4826 * sortedMedian(dev) / math.Sqrt2; s > 0 {
		return s
	}
	// Over half the differences are alike (counts that repeat, a regular
	// wobble): their standard deviation instead.
	var ss float64
	for _, v := range d {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss/float64(len(d))) / math.Sqrt2
}
