package record

import "time"

// Split is where one request's time to its first token went (METRICS.md
// §2): before it was sent, the client's own wait and the opening of a new
// connection (their sum is the client queue); after, the TTFT cut into the
// parts the server reported and the rest. A part the server did not report
// is unknown (its Known flag false) and lies inside Rest: never guessed.
// The known parts and Rest sum to the TTFT exactly.
type Split struct {
	ClientWait, Connect time.Duration
	// Queue is the server's queue (arrival to the first forward step) and
	// Prefill its prompt processing up to the first token, as it reported.
	Queue, Prefill           time.Duration
	QueueKnown, PrefillKnown bool
	// Rest is TTFT less the known server parts: the request's delivery,
	// the first token's delivery, the server's own other work (parsing,
	// tokenizing, writing) and every unknown part. Negative only when the
	// server's clock says more than the client saw (ms rounding: TGI).
	Rest time.Duration
}

// TTFTSplit cuts the request's TTFT into the parts its server reported
// (Record.Server) and the rest; ok is false when no token arrived.
func (r *Record) TTFTSplit() (Split, bool) {
	ttft, ok := r.TTFT()
	if !ok {
		return Split{}, false
	}
	q := r.ClientQueue()
	s := Split{Connect: r.Connect, ClientWait: max(q-r.Connect, 0), Rest: ttft}
	if t := r.Server; t != nil {
		if t.QueueMs > 0 {
			s.Queue, s.QueueKnown = fromMs(t.QueueMs), true
			s.Rest -= s.Queue
		}
		if t.PromptMs > 0 {
			s.Prefill, s.PrefillKnown = fromMs(t.PromptMs), true
			s.Rest -= s.Prefill
		}
	}
	return s, true
}

// fromMs is a duration given in milliseconds, rounded to the nanosecond.
func fromMs(v float64) time.Duration { return time.Duration(v*1e6 + 0.5) }
