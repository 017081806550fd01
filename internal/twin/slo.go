package twin

import (
	"fmt"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/summary"
)

// SLOShare is the share of requests that must meet every objective for a
// level to meet an SLO, as --until-saturated stops.
const SLOShare = 0.9

// MaxUnderSLO is the highest concurrency up to upTo at which the twin
// predicts at least SLOShare of requests to meet slo: levels doubled from
// 1 until one fails, then bisected between the last that met it and the
// first that did not.
func (t *Fitted) MaxUnderSLO(slo record.SLO, upTo int, o Options) analyze.TwinSLO {
	meets := func(c int) bool {
		st := t.replayLevel(t.v, c, o, slo)
		return st.OK > 0 && float64(st.SLOMet) >= SLOShare*float64(st.OK)
	}
	ok, bad := 0, 0
	for c := 1; c <= upTo; c *= 2 {
		if !meets(c) {
			bad = c
			break
		}
		ok = c
	}
	if bad == 0 && ok < upTo && meets(upTo) {
		ok = upTo
	} else if bad == 0 && ok < upTo {
		bad = upTo
	}
	for bad > 0 && bad-ok > 1 {
		mid := (ok + bad) / 2
		if meets(mid) {
			ok = mid
		} else {
			bad = mid
		}
	}
	out := analyze.TwinSLO{SLO: slo, MaxConcurrency: ok, Searched: upTo}
	what := sloText(slo)
	switch {
	case ok == 0:
		out.Text = fmt.Sprintf("the twin predicts no level meets %s for %.0f%% of requests, not even C=1", what, 100*SLOShare)
	case ok == upTo:
		out.Text = fmt.Sprintf("the twin predicts every level up to C=%d meets %s for %.0f%% of requests (raise --max-concurrency to look further)", upTo, what, 100*SLOShare)
	default:
		out.Text = fmt.Sprintf("the twin predicts C=%d is the highest level at which %.0f%% of requests meet %s (C=%d does not)", ok, 100*SLOShare, what, ok+1)
	}
	if ok > t.maxC {
		out.Text += fmt.Sprintf("; beyond the largest measured level (C=%d), so check it", t.maxC)
	}
	return out
}

func sloText(s record.SLO) string {
	var parts []string
	if s.TTFTMs > 0 {
		parts = append(parts, fmt.Sprintf("TTFT ≤ %g ms", s.TTFTMs))
	}
	if s.TPOTMs > 0 {
		parts = append(parts, fmt.Sprintf("TPOT ≤ %g ms", s.TPOTMs))
	}
	if s.E2EMs > 0 {
		parts = append(parts, fmt.Sprintf("E2E ≤ %g ms", s.E2EMs))
	}
	return strings.Join(parts, " and ")
}

// replayLevel replays one level of the run's requests under v.
func (t *Fitted) replayLevel(v vector, c int, o Options, slo record.SLO) summary.Stage {
	return t.predictAtSLO(v, []int{c}, o, slo)[0]
}
