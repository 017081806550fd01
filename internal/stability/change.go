package stability

import (
	"math"
	"slices"
)

// MinSegment is the fewest slices a segment between change points holds:
// one wild slice is an outlier, not a new level.
const MinSegment = 3

// sse is the sum of squared deviations of y[from:to] from its mean, from
// prefix sums s (of y) and q (of y²).
func sse(s, q []float64, from, to int) float64 {
	n := float64(to - from)
	sum := s[to] - s[from]
	return max(q[to]-q[from]-sum*sum/n, 0)
}

// Segment finds change points in the mean of y by binary segmentation: a
// segment is split where that lowers its squared error most, while the
// drop is more than penalty·σ² and both sides hold MinSegment values. It
// returns the first index of each new segment, in order.
func Segment(y []float64, sigma, penalty float64) []int {
	n := len(y)
	s, q := make([]float64, n+1), make([]float64, n+1)
	for i, v := range y {
		s[i+1], q[i+1] = s[i]+v, q[i]+v*v
	}
	var cuts []int
	var split func(from, to int)
	split = func(from, to int) {
		if to-from < 2*MinSegment {
			return
		}
		whole := sse(s, q, from, to)
		best, at := 0.0, -1
		for k := from + MinSegment; k <= to-MinSegment; k++ {
			if gain := whole - sse(s, q, from, k) - sse(s, q, k, to); gain > best {
				best, at = gain, k
			}
		}
		if at < 0 || !(best > penalty*sigma*sigma) {
			return
		}
		cuts = append(cuts, at)
		split(from, at)
		split(at, to)
	}
	split(0, n)
	slices.Sort(cuts)
	return cuts
}

// segmentsSSE is the squared error of y about the means of the segments
// cuts makes.
func segmentsSSE(y []float64, cuts []int) float64 {
	total, from := 0.0, 0
	for _, to := range append(slices.Clone(cuts), len(y)) {
		m := 0.0
		for _, v := range y[from:to] {
			m += v
		}
		m /= float64(to - from)
		for _, v := range y[from:to] {
			total += (v - m) * (v - m)
		}
		from = to
	}
	return total
}

// lineSSE is the squared error of y about its least-squares line in x.
func lineSSE(x, y []float64) float64 {
	n := float64(len(x))
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	b := 0.0
	if sxx > 0 {
		b = sxy / sxx
	}
	total := 0.0
	for i := range x {
		r := y[i] - my - b*(x[i]-mx)
		total += r * r
	}
	return total
}

// clip limits y to its median ± k·σ, so one wild slice (a p99 of a few
// requests) cannot pass for a shift on its own.
func clip(y []float64, sigma, k float64) []float64 {
	m := sortedMedian(y)
	out := make([]float64, len(y))
	for i, v := range y {
		out[i] = math.Min(math.Max(v, m-k*sigma), m+k*sigma)
	}
	return out
}

// quadSSE is the squared error of y about its least-squares parabola in
// x: a smooth curve that bends (a drift that slows or speeds up), which a
// run of steps must beat to be called change points.
func quadSSE(x, y []float64) float64 {
	n := float64(len(x))
	var mx float64
	for _, v := range x {
		mx += v / n
	}
	// Normal equations of y = a + b·u + c·u² with u = x − mean(x).
	var s1, s2, s3, s4, t0, t1, t2 float64
	for i := range x {
		u := x[i] - mx
		s1, s2, s3, s4 = s1+u, s2+u*u, s3+u*u*u, s4+u*u*u*u
		t0, t1, t2 = t0+y[i], t1+u*y[i], t2+u*u*y[i]
	}
	m := [3][4]float64{{n, s1, s2, t0}, {s1, s2, s3, t1}, {s2, s3, s4, t2}}
	for c := range 3 {
		p := c
		for r := c + 1; r < 3; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		m[c], m[p] = m[p], m[c]
		if m[c][c] == 0 {
			return lineSSE(x, y) // too few distinct x for a parabola
		}
		for r := range 3 {
			if r != c {
				f := m[r][c] / m[c][c]
				for k := c; k < 4; k++ {
					m[r][k] -= f * m[c][k]
				}
			}
		}
	}
	a, b, c := m[0][3]/m[0][0], m[1][3]/m[1][1], m[2][3]/m[2][2]
	total := 0.0
	for i := range x {
		u := x[i] - mx
		r := y[i] - a - b*u - c*u*u
		total += r * r
	}
	return total
}
