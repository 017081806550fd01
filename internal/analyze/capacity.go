package analyze

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// Capacity is a capacity search's answer (--until-slo): how many
// concurrent agent sessions meet p99 limits on their per-turn TTFT and
// TPOT, from levels judged one by one (METRICS.md §3, Capacity under an
// SLO). Each level's p99 has a 95% interval over blocks of sessions that
// started together, not over turns, which share the server's state.
type Capacity struct {
	TTFTMs float64 `json:"ttft_p99_limit_ms,omitempty"`
	TPOTMs float64 `json:"tpot_p99_limit_ms,omitempty"`
	Levels []Level `json:"levels"`
	// Meets is the highest level that passed with every level below it
	// passing (0: none did); Above is the lowest level above it, which
	// failed or could not be told (0: none ran).
	Meets int `json:"meets"`
	Above int `json:"above,omitempty"`
	// Answer says it in a sentence.
	Answer string `json:"answer"`
}

// Level is one level of concurrent sessions judged against the limits:
// pass when every limit is above its interval, fail when one is below
// its interval, else cannot tell.
type Level struct {
	Concurrency int `json:"concurrency"`
	// Sessions are those judged: the first round's left out.
	Sessions int    `json:"sessions"`
	Blocks   int    `json:"blocks"`
	TTFT     P99    `json:"ttft_p99_ms"`
	TPOT     P99    `json:"tpot_p99_ms"`
	Verdict  string `json:"verdict"`
}

// The verdicts of a level.
const (
	Pass       = "pass"
	Fail       = "fail"
	CannotTell = "cannot tell"
)

// P99 is a p99 estimate with its 95% interval; Hi is +Inf where the
// samples cannot bound it from above, and both are NaN with too few
// blocks.
type P99 struct {
	Est, Lo, Hi float64
}

// MarshalJSON writes the bound as [est, lo, hi], null where not finite.
func (b P99) MarshalJSON() ([]byte, error) {
	or := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	return json.Marshal([3]*float64{or(b.Est), or(b.Lo), or(b.Hi)})
}

// judge places a bound against a limit (0: none set).
func (b P99) judge(limit float64) string {
	switch {
	case limit <= 0:
		return Pass
	case b.Lo > limit:
		return Fail
	case b.Hi < limit:
		return Pass
	}
	return CannotTell
}

// JudgeLevel judges a level of c concurrent sessions from its sessions'
// samples (in the order they started): the first round's c sessions are
// left out, since they start at once and their first turns queue behind
// each other's prefill as the steady state never does, and the rest are
// cut into blocks of ceil(c/2) consecutive sessions, each block one draw.
// A failed session anywhere fails the level.
func JudgeLevel(sessions []summary.SessionSample, c int, limits record.SLO) Level {
	per := max(1, (c+1)/2)
	var ttft, tpot [][]float64
	lv := Level{Concurrency: c}
	failed := false
	for i, s := range sessions {
		if s.Failed {
			failed = true
			continue
		}
		if i < c && len(sessions) > 2*c {
			continue // the first round's
		}
		if lv.Sessions%per == 0 {
			ttft, tpot = append(ttft, nil), append(tpot, nil)
		}
		lv.Sessions++
		k := len(ttft) - 1
		ttft[k], tpot[k] = append(ttft[k], sessions[i].TTFT...), append(tpot[k], sessions[i].TPOT...)
	}
	lv.Blocks = len(ttft)
	lv.TTFT.Est, lv.TTFT.Lo, lv.TTFT.Hi = stats.QuantileCI(ttft, 99)
	lv.TPOT.Est, lv.TPOT.Lo, lv.TPOT.Hi = stats.QuantileCI(tpot, 99)
	a, b := lv.TTFT.judge(limits.TTFTMs), lv.TPOT.judge(limits.TPOTMs)
	switch {
	case failed:
		lv.Verdict = Fail // a session that failed is a session not served
	case a == Fail || b == Fail:
		lv.Verdict = Fail
	case a == Pass && b == Pass:
		lv.Verdict = Pass
	default:
		lv.Verdict = CannotTell
	}
	return lv
}

// NewCapacity is the answer of the levels judged so far.
func NewCapacity(levels []Level, limits record.SLO) *Capacity {
	levels = slices.Clone(levels)
	slices.SortStableFunc(levels, func(a, b Level) int { return a.Concurrency - b.Concurrency })
	c := &Capacity{TTFTMs: limits.TTFTMs, TPOTMs: limits.TPOTMs, Levels: levels}
	for _, lv := range levels {
		if lv.Verdict != Pass {
			c.Above = lv.Concurrency
			break
		}
		c.Meets = lv.Concurrency
	}
	c.Answer = c.answer()
	return c
}

// Next is the level to run next, 0 when the search is done: doubling
// while every level passes (up to most), then halving the gap between
// the highest passing level and the lowest one above it that did not.
func (c *Capacity) Next(most int) int {
	if len(c.Levels) == 0 {
		return 0
	}
	if c.Above == 0 {
		top := c.Levels[len(c.Levels)-1].Concurrency
		if top*2 > most {
			return 0
		}
		return top * 2
	}
	mid := (c.Meets + c.Above) / 2
	if mid <= c.Meets || mid >= c.Above || c.has(mid) {
		return 0
	}
	return max(mid, 1)
}

func (c *Capacity) has(n int) bool {
	return slices.ContainsFunc(c.Levels, func(lv Level) bool { return lv.Concurrency == n })
}

// limitsText is "TTFT p99 ≤ 2000 ms and TPOT p99 ≤ 50 ms".
func (c *Capacity) limitsText() string {
	var parts []string
	if c.TTFTMs > 0 {
		parts = append(parts, fmt.Sprintf("TTFT p99 ≤ %g ms", c.TTFTMs))
	}
	if c.TPOTMs > 0 {
		parts = append(parts, fmt.Sprintf("TPOT p99 ≤ %g ms", c.TPOTMs))
	}
	return strings.Join(parts, " and ")
}

func (c *Capacity) answer() string {
	lim := c.limitsText()
	var above string
	if c.Above > 0 {
		lv := c.Levels[slices.IndexFunc(c.Levels, func(lv Level) bool { return lv.Concurrency == c.Above })]
		what := "fails"
		if lv.Verdict == CannotTell {
			what = "cannot be told (an interval holds a limit)"
		}
		above = fmt.Sprintf(" (%d %s: TTFT p99 %s ms, TPOT p99 %s ms)", c.Above, what, lv.TTFT, lv.TPOT)
		if math.IsNaN(lv.TTFT.Est) {
			above = fmt.Sprintf(" (%d %s: no turn ended ok)", c.Above, what)
		}
	}
	if c.Meets == 0 {
		return fmt.Sprintf("no level tried meets %s%s", lim, above)
	}
	lv := c.Levels[slices.IndexFunc(c.Levels, func(lv Level) bool { return lv.Concurrency == c.Meets })]
	if c.Above == 0 {
		above = " (the highest level tried)"
	}
	return fmt.Sprintf("%d concurrent sessions meet %s: TTFT p99 %s ms, TPOT p99 %s ms%s", c.Meets, lim, lv.TTFT, lv.TPOT, above)
}

// String is "812 [790, 840]", "812 [790, ∞)" or "812 (too few blocks)".
func (b P99) String() string {
	switch {
	case math.IsNaN(b.Est):
		return "none"
	case math.IsNaN(b.Lo):
		return fmt.Sprintf("%.3g (too few blocks for an interval)", b.Est)
	case math.IsInf(b.Hi, 1):
		return fmt.Sprintf("%.3g [%.3g, ∞)", b.Est, b.Lo)
	}
	return fmt.Sprintf("%.3g [%.3g, %.3g]", b.Est, b.Lo, b.Hi)
}
