package analyze

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// limitRun is an open-loop stage at 2 req/s judged as MLPerf's Server
// scenario with llama2-70b's limits: one request a tpots entry, sent 0.5 s
// apart, whose TTFT is ttft and whose every later token comes that TPOT
// after the one before; failed requests follow them.
func limitRun(ttft time.Duration, tpots []time.Duration, failed int, asked float64) *Run {
	setup := record.Setup{SLO: record.SLO{TTFTMs: 2000, TPOTMs: 200},
		Load:   record.Load{Rate: 2, Rates: []float64{2}, Arrival: "poisson", DurationS: asked},
		Preset: &record.Preset{Name: "mlperf-server:llama2-70b", Judge: "p99", MinDurationS: 600}}
	f := NewFold(setup, "")
	for i, tpot := range tpots {
		sent := time.Duration(i) * 500 * time.Millisecond
		r := record.New(i)
		r.Rate, r.Scheduled, r.Sent, r.FirstByte = 2, sent, sent, sent+ttft
		for k := range 8 {
			r.AddChunk(sent+ttft+time.Duration(k)*tpot, 1)
		}
		r.Done = r.LastToken
		r.Status, r.OutputTokens, r.OutputSource = record.StatusOK, 8, record.SourceUsage
		f.Add(&r)
	}
	for i := range failed {
		r := record.New(len(tpots) + i)
		r.Rate, r.Sent, r.Done, r.Status = 2, time.Duration(i)*time.Second, time.Duration(i)*time.Second+time.Millisecond, record.StatusHTTPError
		f.Add(&r)
	}
	return f.Run()
}

// tpots is n TPOTs of d, the last slow ones of slow.
func tpots(n int, d time.Duration, slow int, s time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
		if i >= n-slow {
			out[i] = s
		}
	}
	return out
}

// The verdict is MLPerf's: p99 over the measured requests against each
// limit, at loadgen's rank (of 200 requests the 199th: one slow request
// passes, two fail, where tokperf's own nearest-rank p99, the 198th, is
// still fast), every query must complete, and a stage too short, too
// small or cut short is not judged.
func TestLimitVerdict(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		run        *Run
		kind, text string
		ttft, tpot float64
	}{
		{"within", limitRun(300*time.Millisecond, tpots(200, 50*time.Millisecond, 0, 0), 0, 600), LimitPass,
			"PASS: p99 TTFT 300.0 ms ≤ 2000 ms, p99 TPOT 50.0 ms ≤ 200 ms, over 200 measured requests", 300, 50},
		{"one slow request in 200 is the 1% p99 leaves out", limitRun(300*time.Millisecond, tpots(200, 50*time.Millisecond, 1, 400*time.Millisecond), 0, 600), LimitPass,
			"PASS: p99 TTFT 300.0 ms ≤ 2000 ms, p99 TPOT 50.0 ms ≤ 200 ms", 300, 50},
		{"two slow in 200 are over MLPerf's p99, if not over tokperf's", limitRun(300*time.Millisecond, tpots(200, 50*time.Millisecond, 2, 400*time.Millisecond), 0, 600), LimitFail,
			"FAIL: p99 TTFT 300.0 ms ≤ 2000 ms, p99 TPOT 400.0 ms > 200 ms", 300, 400},
		{"three slow in 200 are over p99", limitRun(300*time.Millisecond, tpots(200, 50*time.Millisecond, 3, 400*time.Millisecond), 0, 600), LimitFail,
			"FAIL: p99 TTFT 300.0 ms ≤ 2000 ms, p99 TPOT 400.0 ms > 200 ms", 300, 400},
		{"TTFT over", limitRun(2500*time.Millisecond, tpots(200, 50*time.Millisecond, 0, 0), 0, 600), LimitFail,
			"FAIL: p99 TTFT 2500.0 ms > 2000 ms, p99 TPOT 50.0 ms ≤ 200 ms", 2500, 50},
		{"a failed request", limitRun(300*time.Millisecond, tpots(200, 50*time.Millisecond, 0, 0), 1, 600), LimitFail,
			"FAIL: 1 of 201 requests failed (every query must complete)", 300, 50},
		{"too few", limitRun(300*time.Millisecond, tpots(99, 50*time.Millisecond, 0, 0), 0, 600), LimitNotJudged,
			"not judged: 99 requests finished ok; a p99 needs 100", 300, 50},
		{"asked too short", limitRun(300*time.Millisecond, tpots(200, 50*time.Millisecond, 0, 0), 0, 60), LimitNotJudged,
			"not judged: the stage was asked to last 60s; the scenario needs at least 600s", 300, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sh := tc.run.Shape
			if sh == nil || len(sh.Verdicts) != 1 {
				t.Fatalf("shape %+v", sh)
			}
			v := sh.Verdicts[0]
			if v.Kind != tc.kind || !strings.HasPrefix(v.Text, tc.text) {
				t.Errorf("%s %q, want %s %q", v.Kind, v.Text, tc.kind, tc.text)
			}
			if !nearMs(v.TTFTP99Ms, tc.ttft) || (tc.tpot > 0 && !nearMs(v.TPOTP99Ms, tc.tpot)) {
				t.Errorf("p99 TTFT %g TPOT %g, want %g %g", v.TTFTP99Ms, v.TPOTP99Ms, tc.ttft, tc.tpot)
			}
			if st := tc.run.Stages[0]; tc.name[:3] == "two" && st.TPOT.P99 != 50 {
				t.Errorf("the table's p99 TPOT is %g, want tokperf's nearest rank, 50", st.TPOT.P99)
			}
			if failed := sh.Failed(); failed != (tc.kind == LimitFail) {
				t.Errorf("Failed() %v for %s", failed, v.Kind)
			}
			withheld := tc.run.Withheld()
			if (tc.kind == LimitNotJudged) != (len(withheld) == 1 && strings.Contains(withheld[0], v.Text)) {
				t.Errorf("withheld %q for %s", withheld, v.Kind)
			}
		})
	}
	// A run stopped by a signal is not judged, whatever its p99s.
	r := limitRun(300*time.Millisecond, tpots(200, 50*time.Millisecond, 0, 0), 0, 600)
	r.Integrity.Interrupted = true
	if v := shapeOf(r).Verdicts[0]; v.Kind != LimitNotJudged || !strings.Contains(v.Text, "interrupted") {
		t.Errorf("interrupted: %s %q", v.Kind, v.Text)
	}
	// Without a judging preset there is no verdict.
	r.Setup.Preset.Judge = ""
	if sh := shapeOf(r); sh != nil {
		t.Errorf("no judge: %+v", sh)
	}
}

// nearMs says two milliseconds agree to a microsecond.
func nearMs(a, b float64) bool { return math.Abs(a-b) < 1e-3 }
