package summary

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// A stage's split: each part's median over the requests that reported it,
// means that add up to the mean TTFT (an unreported part in the rest), and
// shares of the TTFT that sum to 1, against parts drawn at random for
// each request and summed here the slow way.
func TestStageSplit(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 41))
	var (
		recs                       []record.Record
		queues, prefills, rests    []float64
		sumTTFT, sumQ, sumP, sumRs float64
	)
	for i := range 301 {
		q := time.Duration(rng.IntN(50_000)) * time.Microsecond
		p := time.Duration(1_000+rng.IntN(80_000)) * time.Microsecond
		net := time.Duration(rng.IntN(3_000)) * time.Microsecond
		r := req(time.Duration(i)*msec, q+p+net, 10*msec, 1, 1, 1)
		r.Scheduled, r.Connect = r.Sent-2*msec, msec
		r.Server = &record.ServerTiming{PromptMs: record.Ms(p)}
		rest := net
		if i%3 == 0 { // a third report their queue too (a mixed fleet)
			r.Server.QueueMs = record.Ms(q)
			queues = append(queues, record.Ms(q))
			sumQ += record.Ms(q)
		} else {
			rest += q
		}
		prefills, rests = append(prefills, record.Ms(p)), append(rests, record.Ms(rest))
		sumTTFT, sumP, sumRs = sumTTFT+record.Ms(q+p+net), sumP+record.Ms(p), sumRs+record.Ms(rest)
		recs = append(recs, r)
	}
	plain := req(0, 50*msec, 10*msec, 1, 1) // no server timing: not in the split
	recs = append(recs, plain)
	s := Of(recs, 4).TTFTSplit
	if s == nil || s.Requests != 301 || s.Queue == nil || s.Prefill == nil {
		t.Fatalf("split %+v", s)
	}
	median := func(xs []float64) float64 { slices.Sort(xs); return xs[(len(xs)-1)/2] }
	n := float64(s.Requests)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"queue n", float64(s.Queue.N), float64(len(queues))},
		{"queue p50", s.Queue.P50Ms, median(queues)},
		{"prefill p50", s.Prefill.P50Ms, median(prefills)},
		{"rest p50", s.Rest.P50Ms, median(rests)},
		{"queue mean", s.Queue.MeanMs, sumQ / n},
		{"prefill share", s.Prefill.Share, sumP / sumTTFT},
		{"rest share", s.Rest.Share, sumRs / sumTTFT},
		{"shares", s.Queue.Share + s.Prefill.Share + s.Rest.Share, 1},
		{"means", s.Queue.MeanMs + s.Prefill.MeanMs + s.Rest.MeanMs, s.TTFTMs},
		{"TTFT mean", s.TTFTMs, sumTTFT / n},
		{"client wait p50", s.ClientWait.P50Ms, 1},
		{"connect share", s.Connect.Share, n / sumTTFT},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if Of([]record.Record{plain}, 1).TTFTSplit != nil {
		t.Error("a stage whose server reported no part has a split")
	}
}
