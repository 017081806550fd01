package bench

import (
	"strconv"

	"github.com/tokperf/tokperf/internal/runner"
)

// speedup is the trace's pace multiplier, 1 when unset.
func (l Load) speedup() float64 {
	if l.Speedup > 0 {
		return l.Speedup
	}
	return 1
}

// traceRate is the trace's mean rate at its speedup, requests/s (recorded
// with each request; the schedule is the timestamps). A trace whose
// requests all share one timestamp counts as 1/s a request, so the stage
// is still an open loop.
func (l Load) traceRate() float64 {
	s := l.Trace.Stats(1)
	rate := s.Rate * l.speedup()
	if s.Rate == 0 {
		rate = float64(s.Requests) * l.speedup()
	}
	// Three significant digits: it labels the stage.
	r, _ := strconv.ParseFloat(strconv.FormatFloat(rate, 'g', 3, 64), 64)
	return r
}

// tracePlan is the one open-loop stage of a trace: its requests at their
// timestamps, no warm-up (it would take the trace's first requests), the
// concurrency a cap when one was set.
func (l Load) tracePlan() runner.Plan {
	p := runner.Plan{Rate: l.traceRate(), At: l.Trace.Arrivals(l.speedup()), Requests: len(l.Trace.Requests), Timeout: l.Timeout, Seed: l.Seed}
	if l.CapSet && len(l.Concurrency) > 0 {
		p.Concurrency = l.Concurrency[0]
	}
	return p
}
