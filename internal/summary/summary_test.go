package summary

import (
	"math"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

const msec = time.Millisecond

// req builds an ok record sent at sent with chunks of the given tokens
// every gap after ttft, done at the last chunk.
func req(sent, ttft, gap time.Duration, tokens ...int) record.Record {
	r := record.New(0)
	r.Sent, r.Scheduled = sent, sent
	at := sent + ttft
	for _, n := range tokens {
		r.AddChunk(at, n)
		r.OutputTokens += n
		at += gap
	}
	r.Done = r.LastToken
	r.Status, r.OutputSource, r.ChunkSource = record.StatusOK, record.SourceUsage, record.SourceContinuous
	return r
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

func TestFiguresByDefinition(t *testing.T) {
	t.Parallel()
	// One request: first chunk 1 token at 100 ms, then three chunks of 3
	// tokens 30 ms apart: 10 tokens, decode 9 tokens in 90 ms.
	s := Of([]record.Record{req(0, 100*msec, 30*msec, 1, 3, 3, 3)}, 1)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"TTFT ms", s.TTFT.Mean, 100},
		{"E2E ms", s.E2E.Mean, 190},
		{"TPOT ms", s.TPOT.Mean, 10},
		{"decode tok/s", s.DecodeTokS.Mean, 100},
		{"request tok/s", s.RequestTokS.Mean, 10 / 0.19},
		{"ICL p50 ms", s.ICL.P50, 30},
		{"ITL p50 ms (chunk-aware)", s.ITL.P50, 10},
		{"ITL tokens", float64(s.ITL.N), 9},
		{"tokens per chunk", s.TokensPerChunk, 2.5},
		{"aggregate tok/s", s.AggregateTokS, 10 / 0.19},
		{"wall s", s.WallS, 0.19},
		{"effective concurrency", s.EffectiveConcurrency, 1},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestWarmupAndErrorsExcluded(t *testing.T) {
	t.Parallel()
	w := req(0, 10*msec, 10*msec, 1, 1)
	w.Warmup = true
	bad := record.New(1)
	bad.Sent, bad.Done, bad.Status = 0, 50*msec, record.StatusHTTPError
	s := Of([]record.Record{w, bad, req(0, 10*msec, 10*msec, 1, 1, 1)}, 2)
	if s.Requests != 2 || s.OK != 1 || s.Errors[record.StatusHTTPError] != 1 || s.OutputTokens != 3 {
		t.Errorf("requests %d ok %d errors %v tokens %d", s.Requests, s.OK, s.Errors, s.OutputTokens)
	}
	// The window runs from the first measured send to the last measured end.
	if !near(s.WallS, 0.05) {
		t.Errorf("wall %v s, want 0.05", s.WallS)
	}
}

func TestSteadyStateExcludesDrain(t *testing.T) {
	t.Parallel()
	// Two requests in flight from 0 to 100 ms (one token each 10 ms), then
	// one alone until 300 ms: the steady state is the first 100 ms only.
	a := req(0, 10*msec, 10*msec, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1) // chunks at 10..100 ms
	b := req(0, 10*msec, 10*msec, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	s := Of([]record.Record{a, b}, 2)
	if !near(s.SteadyTokS, 20/0.1) {
		t.Errorf("steady %v tok/s, want 200", s.SteadyTokS)
	}
	if !near(s.AggregateTokS, 40/0.3) {
		t.Errorf("aggregate %v tok/s, want %v", s.AggregateTokS, 40/0.3)
	}
}

func TestGoodput(t *testing.T) {
	t.Parallel()
	fast := req(0, 10*msec, 10*msec, 1, 1, 1)  // TTFT 10 ms, TPOT 10 ms
	slow := req(0, 300*msec, 10*msec, 1, 1, 1) // TTFT 300 ms
	s := OfSLO([]record.Record{fast, slow}, 2, record.SLO{TTFTMs: 100})
	if s.SLOMet != 1 || !near(s.GoodputTokS, 3/s.WallS) || !near(s.GoodputRequestsPerS, 1/s.WallS) {
		t.Errorf("met %d, goodput %v tok/s %v req/s", s.SLOMet, s.GoodputTokS, s.GoodputRequestsPerS)
	}
	if s := Of([]record.Record{fast, slow}, 2); s.SLOMet != 2 {
		t.Errorf("no SLO: %d met, want every ok request", s.SLOMet)
	}
	if s := OfSLO([]record.Record{fast, slow}, 2, record.SLO{TPOTMs: 5}); s.SLOMet != 0 {
		t.Errorf("TPOT 5 ms: %d met", s.SLOMet)
	}
}

// BenchmarkOf is the summary of a stage of 10,000 requests of 100 chunks.
func BenchmarkOf(b *testing.B) {
	recs := make([]record.Record, 10000)
	for i := range recs {
		recs[i] = req(time.Duration(i)*time.Millisecond, 50*msec, 10*msec, make100()...)
	}
	b.ReportAllocs()
	for b.Loop() {
		Of(recs, 64)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/request")
}

func make100() []int {
	out := make([]int, 100)
	for i := range out {
		out[i] = 1
	}
	return out
}

// The client's wait is its queue less the time spent dialling: a request
// scheduled at 0, sent at 5 ms after a 4 ms connect waited 1 ms on the client.
func TestClientWaitLeavesOutConnect(t *testing.T) {
	t.Parallel()
	a := req(5*msec, 10*msec, msec, 1, 1)
	a.Scheduled, a.Connect = 0, 4*msec
	b := req(20*msec, 10*msec, msec, 1, 1)
	b.Scheduled = 18 * msec // a reused connection: 2 ms of the client's own
	s := Of([]record.Record{a, b}, 2)
	if !near(s.ClientQueue.Mean, 3.5) || !near(s.ClientWait.Mean, 1.5) || !near(s.ClientWait.Max, 2) {
		t.Errorf("queue mean %v, wait mean %v max %v; want 3.5, 1.5, 2", s.ClientQueue.Mean, s.ClientWait.Mean, s.ClientWait.Max)
	}
}

// An open-loop send is late only past LateThreshold and the timer's own
// oversleep: with timers waking 1.1 ms late, 1.5 ms is on time, 2.5 ms late.
func TestLateThresholdFollowsTheTimer(t *testing.T) {
	t.Parallel()
	rec := func(lateBy time.Duration) record.Record {
		r := req(10*msec+lateBy, msec, msec, 1, 1)
		r.Scheduled, r.Rate = 10*msec, 5
		return r
	}
	a := NewAcc(0, record.SLO{})
	a.TimerLate(1100 * time.Microsecond)
	for _, d := range []time.Duration{1500 * time.Microsecond, 2500 * time.Microsecond} {
		r := rec(d)
		a.Add(&r)
	}
	if s := a.Stage(); s.Late != 1 || !near(s.LateMs, 2.1) {
		t.Errorf("%d late past %v ms, want 1 past 2.1", s.Late, s.LateMs)
	}
	b := NewAcc(0, record.SLO{}) // no probe: 1 ms
	r := rec(1500 * time.Microsecond)
	b.Add(&r)
	if s := b.Stage(); s.Late != 1 {
		t.Errorf("%d late without a probe, want 1", s.Late)
	}
}
