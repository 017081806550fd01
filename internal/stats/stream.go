package stats

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
)

// Each produces a sample one value at a time, each counted w times; it
// must produce the same values every time it is called.
type Each func(emit func(v float64, w int))

// DescribeEach is DescribeWeighted of a sample too large to hold: it
// reads the sample a few times (at most five) and keeps only histograms,
// finding each nearest-rank percentile exactly, 16 bits of its value at a
// time. The mean is summed in the order the values come. A sample of at
// most smallSample values is held and sorted instead (twice read): the
// histograms, 2 MB to clear and scan on every pass, cost a short stage
// more than sorting it.
func DescribeEach(each Each) Dist {
	total, sum, n := 0, 0.0, 0
	lo, hi := uint64(math.MaxUint64), uint64(0)
	unweighted := true
	each(func(v float64, w int) {
		if w <= 0 {
			return
		}
		n++
		unweighted = unweighted && w == 1
		total += w
		sum += v * float64(w)
		k := key(v)
		lo, hi = min(lo, k), max(hi, k)
	})
	if total == 0 {
		return Describe(nil)
	}
	if n <= smallSample && unweighted {
		return describeKeys(each, n, total, sum, hi)
	}
	if n <= smallSample {
		// The keys sort in the values' order, NaN and -0 included.
		xs := make([]keyed, 0, n)
		each(func(v float64, w int) {
			if w > 0 {
				xs = append(xs, keyed{k: key(v), w: w})
			}
		})
		slices.SortFunc(xs, func(a, b keyed) int { return cmp.Compare(a.k, b.k) })
		var p [4]float64
		c, i := 0, 0
		for j, r := range [4]int{Rank(total, 50) + 1, Rank(total, 90) + 1, Rank(total, 95) + 1, Rank(total, 99) + 1} {
			for ; c < r; i++ {
				c += xs[i].w
			}
			p[j] = value(xs[i-1].k)
		}
		return Dist{N: total, Mean: sum / float64(total), P50: p[0], P90: p[1], P95: p[2], P99: p[3], Max: value(hi)}
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

// describeKeys is DescribeEach of a held sample whose values all count
// once (most are: one gap per token): the bare keys sort in place without
// a comparison function, a third of the time of sorting keyed pairs.
func describeKeys(each Each, n, total int, sum float64, hi uint64) Dist {
	ks := make([]uint64, 0, n)
	each(func(v float64, w int) {
		if w > 0 {
			ks = append(ks, key(v))
		}
	})
	slices.Sort(ks)
	at := func(p float64) float64 { return value(ks[Rank(total, p)]) }
	return Dist{N: total, Mean: sum / float64(total), P50: at(50), P90: at(90), P95: at(95), P99: at(99), Max: value(hi)}
}

// keyed is one value of a held sample, by its key.
type keyed struct {
	k uint64
	w int
}

// smallSample is the most values DescribeEach holds and sorts (16 bytes
// each: 1 MB at most, half the histograms' 2 MB).
var smallSample = 1 << 16

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
