package analyze

import (
	"fmt"
	"strings"

	"github.com/tokperf/tokperf/internal/record"
)

// RunningCap is the most requests the server runs at once, as it stated
// it (record.StatedLimits: SGLang's max_running_requests, llama.cpp's
// slots) or, failing that, as its /metrics showed it at closed-loop
// levels whose requests waited in its queue (the capped warning's
// reading: the most any such level saw running); N 0 when neither says.
func (r *Run) RunningCap() Cap {
	if l := record.StatedLimits(r.Setup.Server); l.MaxRunning > 0 {
		from := "stated by the server"
		for _, f := range l.From {
			if strings.HasSuffix(f, "max_running_requests") || strings.HasSuffix(f, "total_slots") {
				from = f
			}
		}
		return Cap{N: l.MaxRunning, From: from}
	}
	var cp Cap
	for _, s := range r.Stages {
		rd := s.Server
		if rd == nil || s.Rate > 0 || s.Concurrency <= 0 || !(rd.MaxWaiting > 0) || !(rd.MaxRunning >= 1) || rd.MaxRunning >= float64(s.Concurrency) {
			continue
		}
		if n := int(rd.MaxRunning); n > cp.N {
			cp = Cap{N: n, From: fmt.Sprintf("its /metrics at C=%d: at most %d running while up to %.0f waited", s.Concurrency, n, rd.MaxWaiting)}
		}
	}
	return cp
}
