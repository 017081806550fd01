package summary

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
)

// randomStage is n requests of a closed loop of about c slots with uneven
// chunks: several tokens per chunk now and then, failures, cancellations,
// warm-up, and times from microseconds to hours.
// With long, a few gaps between chunks last seconds.
func randomStage(rng *rand.Rand, n, c int, long bool) []record.Record {
	recs := make([]record.Record, n)
	slot := make([]time.Duration, c)
	for i := range recs {
		k := rng.IntN(c)
		r := record.New(i)
		r.Warmup = i < c/2
		r.Scheduled = slot[k]
		r.Sent = r.Scheduled + time.Duration(rng.IntN(2000))*time.Microsecond
		at := r.Sent + time.Duration(rng.ExpFloat64()*float64(40*time.Millisecond))
		if rng.IntN(200) == 0 {
			at += time.Duration(rng.IntN(3)) * time.Hour // a stall
		}
		for range rng.IntN(40) {
			tokens := 1
			if rng.IntN(5) == 0 {
				tokens = 1 + rng.IntN(1000)
			}
			r.AddChunk(at, tokens)
			r.OutputTokens += tokens
			at += time.Duration(rng.IntN(int(30 * time.Millisecond)))
			if long && rng.IntN(500) == 0 {
				at += 5 * time.Second
			}
		}
		r.Done = at
		r.Status, r.OutputSource, r.ChunkSource = record.StatusOK, record.SourceUsage, record.SourceContinuous
		switch rng.IntN(20) {
		case 0:
			r.Status = record.StatusStreamError
		case 1:
			r.Status = record.StatusCancelled
		}
		r.Buffered = rng.IntN(len(r.Chunks) + 1)
		slot[k] = r.Done
		recs[i] = r
	}
	return recs
}

func TestAccKeepsEveryChunk(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	recs := randomStage(rng, 30000, 16, true) // several blocks
	// Chunk times out of order (an edited file) and far from the start.
	recs[40].Chunks = []record.Chunk{{At: 5 * time.Hour, Tokens: 3}, {At: time.Millisecond, Tokens: 1}, {At: 0, Tokens: 7}}
	a := NewAcc(16, record.SLO{})
	var want []record.Chunk
	var weight []float64 // what each chunk counts for: scaled to the server's total where they differ
	for i := range recs {
		a.Add(&recs[i])
		if !recs[i].Warmup {
			want = append(want, recs[i].Chunks...)
			scale := 1.0
			if sum := recs[i].ChunkTokens(); recs[i].OK() && sum > 0 && sum != recs[i].OutputTokens {
				scale = float64(recs[i].OutputTokens) / float64(sum)
			}
			for _, c := range recs[i].Chunks {
				weight = append(weight, float64(c.Tokens)*scale)
			}
		}
	}
	var got []record.Chunk
	a.each(func(_ bool, _ int, at time.Duration, tokens int, _ float64) {
		got = append(got, record.Chunk{At: at, Tokens: tokens})
	})
	if !slices.Equal(got, want) {
		t.Fatalf("%d chunks back, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
	}
	from, to := a.Window()
	for range 50 {
		lo := from + time.Duration(rng.Int64N(int64(to-from)))
		hi := lo + time.Duration(rng.Int64N(int64(to-lo)+1))
		n := 0.0
		for k, c := range want {
			if c.At > lo && c.At <= hi {
				n += weight[k]
			}
		}
		if got := a.TokensIn(lo, hi); math.Abs(got-n) > 1e-6*n {
			t.Fatalf("TokensIn(%v, %v) = %v, want %v", lo, hi, got, n)
		}
	}
	if len(a.blocks) < 2 {
		t.Errorf("%d bytes in %d block: the test should cross blocks", a.stored, len(a.blocks))
	}
	t.Logf("%d chunks in %d bytes", len(want), a.stored)
}

func firstDiff(a, b []record.Chunk) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestAccAgreesWithRecords computes the gap and steady-state figures
// straight from the records, the way METRICS.md words them, and holds the
// accumulator's compact form to the same numbers.
func TestAccAgreesWithRecords(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []int{1, 8, 64, 65} {
		recs := randomStage(rng, 2000, c, c == 65)
		s := Of(recs, c)
		var icl []float64
		var itl []stats.Weighted
		type edge struct {
			at    time.Duration
			delta int
		}
		var edges []edge
		for _, r := range recs {
			if r.Warmup {
				continue
			}
			edges = append(edges, edge{r.Sent, 1}, edge{r.Done, -1})
			if r.Status != record.StatusOK {
				continue
			}
			for i := 1; i < len(r.Chunks); i++ {
				gap := float64(r.Chunks[i].At-r.Chunks[i-1].At) / 1e6
				icl = append(icl, gap)
				itl = append(itl, stats.Weighted{V: gap / float64(r.Chunks[i].Tokens), W: r.Chunks[i].Tokens})
			}
		}
		if want := stats.Describe(icl); !sameDist(s.ICL, want) {
			t.Errorf("C=%d: ICL %+v, want %+v", c, s.ICL, want)
		}
		if want := stats.DescribeWeighted(itl); !sameDist(s.ITL, want) {
			t.Errorf("C=%d: ITL %+v, want %+v", c, s.ITL, want)
		}
		// Steady state: walk the edges in time order, a slot freeing
		// before one is refilled at the same instant.
		sort.Slice(edges, func(i, j int) bool {
			if edges[i].at != edges[j].at {
				return edges[i].at < edges[j].at
			}
			return edges[i].delta < edges[j].delta
		})
		inFlight, open := 0, time.Duration(0)
		var spans [][2]time.Duration
		for _, e := range edges {
			was := inFlight
			inFlight += e.delta
			if was < c && inFlight >= c {
				open = e.at
			} else if was >= c && inFlight < c && e.at > open {
				spans = append(spans, [2]time.Duration{open, e.at})
			}
		}
		var total time.Duration
		tokens := 0
		for _, sp := range spans {
			total += sp[1] - sp[0]
		}
		for _, r := range recs {
			if r.Warmup || r.Status != record.StatusOK {
				continue
			}
			for _, ch := range r.Chunks {
				for _, sp := range spans {
					if ch.At >= sp[0] && ch.At <= sp[1] {
						tokens += ch.Tokens
						break
					}
				}
			}
		}
		want := float64(tokens) / total.Seconds()
		if total <= 0 || !near(s.SteadyTokS, want) {
			t.Errorf("C=%d: steady %v tok/s, want %v (%d spans)", c, s.SteadyTokS, want, len(spans))
		}
	}
}

func sameDist(a, b stats.Dist) bool {
	return a.N == b.N && near(a.Mean, b.Mean) && a.P50 == b.P50 && a.P90 == b.P90 && a.P99 == b.P99 && a.Max == b.Max
}

func TestAccOneTokenChunks(t *testing.T) {
	t.Parallel()
	// With one token per chunk the token-weighted ITL is the ICL sample.
	recs := []record.Record{req(0, 10*msec, 7*msec, 1, 1, 1, 1), req(0, 20*msec, 3*msec, 1, 1, 1)}
	s := Of(recs, 2)
	if s.ITL != s.ICL || s.ITL.N != 5 || s.ITL.P50 != 7 || s.ITL.Max != 7 {
		t.Errorf("ITL %+v, ICL %+v", s.ITL, s.ICL)
	}
}

// A stage's figures read twice cost one pass over its chunks: the second
// Stage allocates none of the first's sample of gaps (a stage's line and
// the run's model both read them). A record added after is in the next.
//
// Serial: it reads the process's allocation count.
func TestAccStageTwice(t *testing.T) {
	a := NewAcc(8, record.SLO{})
	for i := range 2000 {
		r := req(0, 5*msec, time.Millisecond, make16()...)
		r.Sent = time.Duration(i) * time.Millisecond
		a.Add(&r)
	}
	first := a.Stage()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	second := a.Stage()
	runtime.ReadMemStats(&m1)
	if got := m1.TotalAlloc - m0.TotalAlloc; got > 16<<10 {
		t.Errorf("the second Stage allocated %d bytes: it read the %d gaps again", got, first.ICL.N)
	}
	if second.ITL != first.ITL || second.TTFT != first.TTFT || second.SteadyTokS != first.SteadyTokS {
		t.Errorf("read twice: %+v, then %+v", first.ITL, second.ITL)
	}
	slow := req(0, 5*msec, 900*time.Millisecond, 1, 1)
	slow.Sent = 3 * time.Second
	a.Add(&slow)
	if after := a.Stage(); after.ITL.Max != 900 || after.ICL.N != first.ICL.N+1 {
		t.Errorf("after one more request: ITL %+v, ICL n %d (was %d)", after.ITL, after.ICL.N, first.ICL.N)
	}
}

// TestAccMemory holds a stage's memory to what the figures need: far less
// than the Records it was built from.
//
// Serial: it reads the process's heap.
func TestAccMemory(t *testing.T) {
	const n = 100_000
	proto := req(0, 5*msec, time.Millisecond+123*time.Microsecond, make16()...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a := NewAcc(64, record.SLO{})
	for i := range n {
		r := proto
		r.Sent = time.Duration(i) * 300 * time.Microsecond
		a.Add(&r)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perReq := float64(after.HeapAlloc-before.HeapAlloc) / n
	recSize := float64(len(proto.Chunks))*16 + 300
	t.Logf("%.0f bytes per 16-token request kept (a Record with its chunks: about %.0f)", perReq, recSize)
	if perReq > 200 {
		t.Errorf("%.0f bytes kept per 16-token request, want at most 200", perReq)
	}
	if s := a.Stage(); s.OK != n || s.ICL.N != 15*n || s.SteadyTokS <= 0 {
		t.Errorf("ok %d, ICL n %d, steady %v", s.OK, s.ICL.N, s.SteadyTokS)
	}
	runtime.KeepAlive(a)
}

func make16() []int {
	out := make([]int, 16)
	for i := range out {
		out[i] = 1
	}
	return out
}

// BenchmarkAcc adds 16-token requests and reports what each one keeps.
func BenchmarkAcc(b *testing.B) {
	proto := req(0, 5*msec, time.Millisecond+123*time.Microsecond, make16()...)
	b.ReportAllocs()
	a := NewAcc(64, record.SLO{})
	i := 0
	for b.Loop() {
		r := proto
		r.Sent = time.Duration(i) * 300 * time.Microsecond
		a.Add(&r)
		i++
	}
	b.ReportMetric(float64(a.stored)/float64(i), "chunk-bytes/request")
}
