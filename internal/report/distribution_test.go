package report

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/summary"
)

// A run of one level is drawn as its distributions, not as curves against
// load of one point each: the TTFT staircase reaches 100% at the largest
// TTFT and crosses 50% at the median, and the ITL one weighs each gap by
// the tokens it brought.
func TestOneLevelPageShowsDistributions(t *testing.T) {
	t.Parallel()
	var tl analyze.Timeline
	var ttfts []float64
	for i := range 9 {
		sent := time.Duration(i) * time.Second
		ttft := time.Duration(10*(i+1)) * time.Millisecond
		ttfts = append(ttfts, record.Ms(ttft))
		tl.Sample = append(tl.Sample, analyze.TimedRequest{ID: i, Sent: sent, FirstToken: sent + ttft, Done: sent + ttft + 200*time.Millisecond, OK: true, Tokens: 3,
			Arrivals: []analyze.Arrival{{At: sent + ttft, Tokens: 1}, {At: sent + ttft + 20*time.Millisecond, Tokens: 3}}})
	}
	tl.Requests = len(tl.Sample)
	run := &analyze.Run{Stages: []analyze.Stage{{Stage: summary.Stage{Concurrency: 4, OK: 9}, Timeline: &tl}}}
	p := &page{runs: []named{{name: "one", run: run}}}
	var names []string
	charts := p.charts()
	for _, c := range charts {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, []string{"ttft-cdf", "itl-cdf", "e2e-cdf"}) {
		t.Fatalf("charts %v: want the three distributions and no curve against load", names)
	}
	ttft := charts[0].Series[0].Points
	last := ttft[len(ttft)-1]
	if last.Y != 100 || last.X != slices.Max(ttfts) {
		t.Errorf("TTFT staircase ends at (%v, %v), want (%v, 100)", last.X, last.Y, slices.Max(ttfts))
	}
	for _, pt := range ttft {
		if pt.Y >= 50 {
			if pt.X != 50 { // the 5th of 9 TTFTs, 10..90 ms
				t.Errorf("the staircase crosses 50%% at %v ms, want the median 50", pt.X)
			}
			break
		}
	}
	itl := charts[1].Series[0].Points
	if got := itl[len(itl)-1].X; math.Abs(got-10) > 1e-9 {
		t.Errorf("ITL %v ms, want 20 ms over 2 tokens = 10", got)
	}
	if !strings.Contains(charts[0].Note, "C=4, from 9 requests") {
		t.Errorf("note %q does not say what the distribution is drawn from", charts[0].Note)
	}
}

// Levels more than 4× apart are not joined by a line (two configurations
// measured at C=1 and C=32 would cross at a C≈3 nobody measured); levels
// that double are.
func TestFarLevelsNotJoined(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		levels []int
		joined bool
	}{{[]int{1, 32}, false}, {[]int{1, 4, 16, 32}, true}, {[]int{1, 2, 16}, false}} {
		run := &analyze.Run{}
		for _, c := range tc.levels {
			run.Stages = append(run.Stages, analyze.Stage{Stage: summary.Stage{Concurrency: c, OK: 10, AggregateTokS: float64(100 * c)}})
		}
		p := &page{runs: []named{{name: "r", run: run}}}
		c := p.throughput()
		if c.Series[0].Line != tc.joined || strings.Contains(c.Note, "not joined") == tc.joined {
			t.Errorf("levels %v: joined %v, note %q; want joined %v", tc.levels, c.Series[0].Line, c.Note, tc.joined)
		}
	}
}
