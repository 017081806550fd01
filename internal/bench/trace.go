package bench

import (
	"strconv"
	"time"

	"github.com/tokperf/tokperf/internal/runner"
)

// speedup is the trace's pace multiplier, 1 when unset.
func (l Load) speedup() float64 {
	if l.Speedup > 0 {
		return l.Speedup
	}
	return 1
}

// traceArrivals are the send offsets of the trace's requests at its
// speedup: the first Requests of them when set, those before Duration
// when set.
func (l Load) traceArrivals() []time.Duration {
	at := l.Trace.Arrivals(l.speedup())
	if l.Requests > 0 && l.Requests < len(at) {
		at = at[:l.Requests]
	}
	if l.Duration > 0 {
		n := 0
		for n < len(at) && at[n] < l.Duration {
			n++
		}
		at = at[:max(n, 1)]
	}
	return at
}

// traceRate is the mean rate of the requests sent, requests/s to three
// significant digits (recorded with each request and labelling the stage;
// the schedule is the timestamps). Requests that all share one timestamp
// count as their number a second, so the stage is still an open loop.
func traceRate(at []time.Duration) float64 {
	rate := float64(len(at))
	if span := at[len(at)-1] - at[0]; len(at) > 1 && span > 0 {
		rate = float64(len(at)-1) / span.Seconds()
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(rate, 'g', 3, 64), 64)
	return r
}

// tracePlan is the one open-loop stage of a trace: its requests at their
// timestamps, no warm-up (it would take the trace's first requests), the
// concurrency a cap when one was set.
func (l Load) tracePlan() runner.Plan {
	at := l.traceArrivals()
	p := runner.Plan{Rate: traceRate(at), At: at, Requests: len(at), Timeout: l.Timeout, Seed: l.Seed}
	if l.CapSet && len(l.Concurrency) > 0 {
		p.Concurrency = l.Concurrency[0]
	}
	return p
}
