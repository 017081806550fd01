// Package stats computes exact descriptive statistics from raw samples:
// nearest-rank percentiles, means, and their token-weighted forms. It knows
// nothing about LLMs.
//
//	d := stats.Describe([]float64{3, 1, 2}) // d.P50 == 2
package stats

import (
	"encoding/json"
	"math"
	"slices"
	"sort"
)

// Dist summarises a sample.
type Dist struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// MarshalJSON writes an empty sample's figures as zeros (JSON has no NaN;
// N = 0 says they are not figures), and a figure a summary read from
// elsewhere does not have (NaN with N > 0) as null.
func (d Dist) MarshalJSON() ([]byte, error) {
	type plain Dist
	if d.N == 0 {
		return json.Marshal(plain{})
	}
	if !math.IsNaN(d.Mean + d.P50 + d.P90 + d.P95 + d.P99 + d.Max) {
		return json.Marshal(plain(d))
	}
	or := func(v float64) *float64 {
		if math.IsNaN(v) {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		N    int      `json:"n"`
		Mean *float64 `json:"mean"`
		P50  *float64 `json:"p50"`
		P90  *float64 `json:"p90"`
		P95  *float64 `json:"p95"`
		P99  *float64 `json:"p99"`
		Max  *float64 `json:"max"`
	}{d.N, or(d.Mean), or(d.P50), or(d.P90), or(d.P95), or(d.P99), or(d.Max)})
}

// Percentile is the figure of percentile p (50, 90, 95, 99; 100 is the
// maximum), and whether the Dist holds it.
func (d Dist) Percentile(p float64) (float64, bool) {
	switch p {
	case 50:
		return d.P50, true
	case 90:
		return d.P90, true
	case 95:
		return d.P95, true
	case 99:
		return d.P99, true
	case 100:
		return d.Max, true
	}
	return math.NaN(), false
}

// Enough reports whether n samples are enough for percentile p to be
// more than an extreme value: at least 1/(1-p) of them (100 for p99, 20
// for p95, 10 for p90, 2 for the median).
func Enough(n int, p float64) bool {
	if p >= 100 {
		return n > 0
	}
	return float64(n) >= math.Round(1/(1-p/100))
}

// Rank is the nearest-rank index (0-based) of percentile p in n samples:
// the smallest value with at least p% of the samples at or below it.
func Rank(n int, p float64) int {
	r := int(math.Ceil(p / 100 * float64(n)))
	return min(max(r, 1), n) - 1
}

// Describe sorts xs in place and summarises it. An empty sample gives N = 0
// and NaN figures.
func Describe(xs []float64) Dist {
	if len(xs) == 0 {
		nan := math.NaN()
		return Dist{Mean: nan, P50: nan, P90: nan, P95: nan, P99: nan, Max: nan}
	}
	slices.Sort(xs)
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	n := len(xs)
	return Dist{N: n, Mean: sum / float64(n), P50: xs[Rank(n, 50)], P90: xs[Rank(n, 90)], P95: xs[Rank(n, 95)], P99: xs[Rank(n, 99)], Max: xs[n-1]}
}

// Weighted is a value that counts W times.
type Weighted struct {
	V float64
	W int
}

// DescribeWeighted summarises values each counted W times (N is ΣW), with
// exact nearest-rank percentiles over the expanded sample.
func DescribeWeighted(xs []Weighted) Dist {
	total, sum, hi := 0, 0.0, math.Inf(-1)
	for _, x := range xs {
		if x.W <= 0 {
			continue
		}
		total += x.W
		sum += x.V * float64(x.W)
		hi = max(hi, x.V)
	}
	if total == 0 {
		return Describe(nil)
	}
	sort.Slice(xs, func(i, j int) bool { return xs[i].V < xs[j].V })
	at := func(p float64) float64 {
		r := Rank(total, p) + 1
		c := 0
		for _, x := range xs {
			c += max(x.W, 0)
			if c >= r {
				return x.V
			}
		}
		return xs[len(xs)-1].V
	}
	return Dist{N: total, Mean: sum / float64(total), P50: at(50), P90: at(90), P95: at(95), P99: at(99), Max: hi}
}

// Linear is percentile p of sorted xs interpolated linearly between the
// two nearest ranks, numpy's default (np.percentile, np.median): the
// method vLLM, SGLang and AIPerf report with. NaN when xs is empty.
func Linear(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	at := p / 100 * float64(n-1)
	lo := int(math.Floor(at))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (at-float64(lo))*(sorted[lo+1]-sorted[lo])
}
