package stats

import "math"

// MeanDiff is the difference of two sample means, b − a, with the half
// width of its 95% confidence interval (Welch's t, unequal variances).
// Half is NaN when either sample has fewer than two values.
func MeanDiff(a, b []float64) (diff, half float64) {
	ma, va := meanVar(a)
	mb, vb := meanVar(b)
	diff = mb - ma
	if len(a) < 2 || len(b) < 2 {
		return diff, math.NaN()
	}
	sa, sb := va/float64(len(a)), vb/float64(len(b))
	se := math.Sqrt(sa + sb)
	if se == 0 {
		return diff, 0
	}
	df := (sa + sb) * (sa + sb) / (sa*sa/float64(len(a)-1) + sb*sb/float64(len(b)-1))
	return diff, t975(df) * se
}

func meanVar(xs []float64) (mean, variance float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	if len(xs) > 1 {
		variance /= float64(len(xs) - 1)
	}
	return mean, variance
}

// T975 is the 97.5% quantile of Student's t with df degrees of freedom:
// the half width of a 95% interval is T975(df) standard errors.
func T975(df float64) float64 { return t975(df) }

// t975Table is Student's t 97.5% quantile for 1..30 degrees of freedom.
var t975Table = [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

// t975 is the 97.5% quantile of Student's t with df degrees of freedom:
// the table, interpolated in 1/df, up to 30; a Cornish–Fisher expansion
// (within 0.1% there) beyond.
func t975(df float64) float64 {
	const z = 1.959963984540054
	switch {
	case df < 1:
		return t975Table[0]
	case df <= 30:
		lo := math.Floor(df)
		if lo == df {
			return t975Table[int(lo)-1]
		}
		a, b := t975Table[int(lo)-1], t975Table[int(lo)]
		f := (1/lo - 1/df) / (1/lo - 1/(lo+1))
		return a + f*(b-a)
	case math.IsInf(df, 1):
		return z
	}
	z3, z5 := z*z*z, z*z*z*z*z
	return z + (z3+z)/(4*df) + (5*z5+16*z3+3*z)/(96*df*df)
}

// MeanCI is the mean of xs with the half width of its 95% confidence
// interval (Student's t with n − 1 degrees of freedom) and the coefficient
// of variation (sample standard deviation / mean). Half and CV are NaN
// with fewer than two values.
func MeanCI(xs []float64) (mean, half, cv float64) {
	mean, v := meanVar(xs)
	if len(xs) < 2 {
		return mean, math.NaN(), math.NaN()
	}
	sd := math.Sqrt(v)
	return mean, t975(float64(len(xs)-1)) * sd / math.Sqrt(float64(len(xs))), sd / math.Abs(mean)
}
