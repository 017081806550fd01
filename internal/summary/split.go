package summary

import (
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
)

// Split is a stage's TTFT split (docs/METRICS.md §3), over the ok requests
// that streamed a token and whose server reported a queue or a prefill
// time: each part's median over the requests that had it, its mean over
// them all (an unreported part counts 0 there and sits in the rest), and
// its share of their TTFT, Σ part / Σ TTFT. Server queue, prefill and rest
// are the TTFT, so their means sum to the mean TTFT and their shares to 1;
// the client's wait and the connection come before it, their shares of
// the same TTFT said beside it.
type Split struct {
	Requests   int       `json:"requests"`
	TTFTMs     float64   `json:"ttft_mean_ms"`
	ClientWait SplitPart `json:"client_wait"`
	Connect    SplitPart `json:"connect"`
	// Queue and Prefill are nil when no request's server reported them:
	// unknown, and inside the rest.
	Queue   *SplitPart `json:"server_queue,omitempty"`
	Prefill *SplitPart `json:"prefill,omitempty"`
	// Rest is the TTFT less the parts reported: the request's and the first
	// token's delivery, the server's other work, and every unknown part.
	Rest SplitPart `json:"rest"`
}

// SplitPart is one part of a stage's TTFT split.
type SplitPart struct {
	N      int     `json:"n"` // requests that had it
	P50Ms  float64 `json:"p50_ms"`
	MeanMs float64 `json:"mean_ms"` // over all the split's requests
	Share  float64 `json:"share"`   // of their summed TTFT
}

// splitAcc gathers the split's parts, in milliseconds, of the requests
// whose server reported one: it holds nothing for a server that reports
// none, so a stage of a million requests of such a server costs nothing.
type splitAcc struct {
	ttft                                float64
	wait, connect, queue, prefill, rest []float64
}

// add takes one ok request that streamed a token.
func (a *splitAcc) add(r *record.Record) {
	s, ok := r.TTFTSplit()
	if !ok || !s.QueueKnown && !s.PrefillKnown {
		return
	}
	ttft, _ := r.TTFT()
	a.ttft += record.Ms(ttft)
	a.wait = append(a.wait, record.Ms(s.ClientWait))
	a.connect = append(a.connect, record.Ms(s.Connect))
	a.rest = append(a.rest, record.Ms(s.Rest))
	if s.QueueKnown {
		a.queue = append(a.queue, record.Ms(s.Queue))
	}
	if s.PrefillKnown {
		a.prefill = append(a.prefill, record.Ms(s.Prefill))
	}
}

// split is the stage's split, nil when no request had one.
func (a *splitAcc) split() *Split {
	n := len(a.rest)
	if n == 0 {
		return nil
	}
	part := func(xs []float64) SplitPart {
		d := stats.Describe(xs)
		sum := d.Mean * float64(d.N)
		p := SplitPart{N: d.N, P50Ms: d.P50, MeanMs: sum / float64(n)}
		if a.ttft > 0 {
			p.Share = sum / a.ttft
		}
		return p
	}
	opt := func(xs []float64) *SplitPart {
		if len(xs) == 0 {
			return nil
		}
		p := part(xs)
		return &p
	}
	return &Split{Requests: n, TTFTMs: a.ttft / float64(n), ClientWait: part(a.wait), Connect: part(a.connect),
		Queue: opt(a.queue), Prefill: opt(a.prefill), Rest: part(a.rest)}
}
