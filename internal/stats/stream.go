package stats

import (
	"math"
	"math/bits"
)

// Each produces a sample one value at a time, each counted w times; it
// must produce the same values every time it is called.
type Each func(emit func(v float64, w int))

// DescribeEach is DescribeWeighted of a sample too large to hold: it
// reads the sample a few times (at most five) and keeps only histograms,
// finding each nearest-rank percentile exactly, 16 bits of its value at a
// time. The mean is summed in the order the values come.
func DescribeEach(each Each) Dist {
	total, sum := 0, 0.0
	lo, hi := uint64(math.MaxUint64), uint64(0)
	each(func(v float64, w int) {
		if w <= 0 {
			return
		}
		total += w
		sum += v * float64(w)
		k := key(v)
		lo, hi = min(lo, k), max(hi, k)
	})
	if total == 0 {
		return Describe(nil)
	}
	ps := [4]float64{50, 90, 95, 99}
	type target struct {
		prefix uint64 // the key's bits found so far, in place
		rank   int    // 1-based, among the keys under the prefix
	}
	var ts [4]target
	for i, p := range ps {
		ts[i] = target{prefix: lo &^ (1<<(64-bits.LeadingZeros64(lo^hi)) - 1), rank: Rank(total, p) + 1}
	}
	// Bits below the common prefix of every key, resolved from the top.
	var hist [4][]int
	for left := 64 - bits.LeadingZeros64(lo^hi); left > 0; {
		width := min(16, left)
		left -= width
		for i := range hist {
			if hist[i] == nil {
				hist[i] = make([]int, 1<<width)
			}
			hist[i] = hist[i][:1<<width]
			clear(hist[i])
		}
		above := uint64(math.MaxUint64) << (left + width) // bits already known
		if left+width == 64 {
			above = 0
		}
		each(func(v float64, w int) {
			if w <= 0 {
				return
			}
			k := key(v)
			for i := range ts {
				if k&above == ts[i].prefix {
					hist[i][(k>>left)&(1<<width-1)] += w
				}
			}
		})
		for i := range ts {
			c := 0
			for d, n := range hist[i] {
				if c+n >= ts[i].rank {
					ts[i].prefix |= uint64(d) << left
					ts[i].rank -= c
					break
				}
				c += n
			}
		}
	}
	return Dist{N: total, Mean: sum / float64(total), P50: value(ts[0].prefix), P90: value(ts[1].prefix), P95: value(ts[2].prefix), P99: value(ts[3].prefix), Max: value(hi)}
}

// key maps a float64 to a uint64 in the same order.
func key(v float64) uint64 {
	b := math.Float64bits(v)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

func value(k uint64) float64 {
	if k>>63 == 1 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}
