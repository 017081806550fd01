package analyze

import (
	"math"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/summary"
)

// The search doubles while every level passes, then halves the gap
// between the highest passing level and the lowest one above it that
// did not, and stops when they are adjacent or the doubling would pass
// the most it may try.
func TestCapacityNext(t *testing.T) {
	t.Parallel()
	lv := func(c int, v string) Level { return Level{Concurrency: c, Verdict: v} }
	for _, c := range []struct {
		name   string
		levels []Level
		most   int
		next   int
		meets  int
	}{
		{"all pass: double", []Level{lv(1, Pass), lv(2, Pass)}, 64, 4, 2},
		{"the most stops the doubling", []Level{lv(32, Pass), lv(64, Pass)}, 100, 0, 64},
		{"a fail: bisect", []Level{lv(1, Pass), lv(2, Pass), lv(4, Pass), lv(8, Fail)}, 64, 6, 4},
		{"cannot tell bounds it too", []Level{lv(4, Pass), lv(8, CannotTell)}, 64, 6, 4},
		{"adjacent: done", []Level{lv(4, Pass), lv(5, Fail)}, 64, 0, 4},
		{"the first fails: go down", []Level{lv(8, Fail)}, 64, 4, 0},
		{"one fails: done", []Level{lv(1, Fail)}, 64, 0, 0},
		{"a pass above a fail does not count", []Level{lv(2, Pass), lv(4, Fail), lv(8, Pass)}, 64, 3, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cp := NewCapacity(c.levels, record.SLO{TTFTMs: 100})
			if got := cp.Next(c.most); got != c.next || cp.Meets != c.meets {
				t.Errorf("next %d, meets %d; want %d and %d (%s)", got, cp.Meets, c.next, c.meets, cp.Answer)
			}
		})
	}
}

// A level passes when every limit is above its interval, fails when one
// is below it, and cannot be told otherwise; too few turns to bound a
// p99 from above never pass.
func TestJudgeLevel(t *testing.T) {
	t.Parallel()
	// 40 sessions of 30 turns each, TTFT 10..39 ms and TPOT 2 ms: the
	// p99 is 39, known to lie in the top few values.
	var ss []summary.SessionSample
	for range 40 {
		s := summary.SessionSample{}
		for k := range 30 {
			s.TTFT, s.TPOT = append(s.TTFT, float64(10+k)), append(s.TPOT, 2)
		}
		ss = append(ss, s)
	}
	for _, c := range []struct {
		limits record.SLO
		want   string
	}{
		{record.SLO{TTFTMs: 40, TPOTMs: 3}, Pass},
		{record.SLO{TTFTMs: 30}, Fail},
		{record.SLO{TTFTMs: 39, TPOTMs: 3}, CannotTell},
		{record.SLO{TPOTMs: 1}, Fail},
	} {
		lv := JudgeLevel(ss, 4, c.limits)
		if lv.Verdict != c.want {
			t.Errorf("limits %+v: %s (TTFT %s, TPOT %s), want %s", c.limits, lv.Verdict, lv.TTFT, lv.TPOT, c.want)
		}
	}
	few := JudgeLevel(ss[:10], 4, record.SLO{TTFTMs: 1000})
	if few.Verdict == Pass || !math.IsInf(few.TTFT.Hi, 1) {
		t.Errorf("6 sessions judged %s with TTFT %s: too few turns to bound a p99", few.Verdict, few.TTFT)
	}
	ss[7].Failed = true
	if lv := JudgeLevel(ss, 4, record.SLO{TTFTMs: 1000}); lv.Verdict != Fail {
		t.Errorf("a failed session: %s, want fail", lv.Verdict)
	}
	if a := NewCapacity([]Level{JudgeLevel(ss[8:], 4, record.SLO{TTFTMs: 40})}, record.SLO{TTFTMs: 40}).Answer; !strings.HasPrefix(a, "4 concurrent sessions meet TTFT p99 ≤ 40 ms") {
		t.Errorf("answer %q", a)
	}
}
