package twin_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/baseline"
	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/summary"
	"github.com/tokperf/tokperf/internal/twin"
)

// calibrated are the figures whose intervals the calibration checks, and
// how to read each from a measured stage.
var calibrated = []struct {
	name string
	of   func(s *summary.Stage) float64
}{
	{"aggregate tok/s", func(s *summary.Stage) float64 { return s.AggregateTokS }},
	{"decode tok/s", func(s *summary.Stage) float64 { return s.DecodeTokS.Mean }},
	{"TTFT p50 ms", func(s *summary.Stage) float64 { return s.TTFT.P50 }},
}

// coverage is the share of (profile, level, figure) cases whose 95%
// interval must hold what the simulator then measured.
const coverage = 0.90

// The twin's intervals are calibrated: over every built-in profile, the
// twin fitted to a sweep of C = 1, 4, 16 predicts C = 32 and 64, the
// simulator (virtual time) measures them, and the intervals hold the
// measured aggregate tok/s, decode tok/s and TTFT p50 in at least 90% of
// the cases; and the seed article's own C = 32, predicted from its
// table's C = 1, 4, 16, falls inside its interval. The table it prints
// (go test -v, or to the file named by TOKPERF_TWIN_TABLE) is
// docs/METRICS.md §10's.
func TestTwinIntervalsAreCalibrated(t *testing.T) {
	t.Parallel()
	skipUnderRace(t)
	var b strings.Builder
	b.WriteString("| profile | C | figure | predicted (95%) | measured | error | covered |\n|---|--:|---|---|--:|--:|:-:|\n")
	// Each profile's sweeps and fit are independent: they run in parallel,
	// each filling its own rows, and the table joins them in order.
	profiles := sim.Profiles()
	type row struct {
		text    string
		covered bool
	}
	rows := make([][]row, len(profiles))
	t.Run("profiles", func(t *testing.T) {
		for k, prof := range profiles {
			t.Run(prof.Name, func(t *testing.T) {
				t.Parallel()
				in := input(t, sweep(t, prof.Name, defaultWorkload, []int{1, 4, 16}))
				f, err := twin.Fit(in)
				if err != nil {
					t.Fatal(err)
				}
				pred := f.Predict([]int{32, 64}, twin.Options{})
				got := input(t, sweep(t, prof.Name, defaultWorkload, []int{32, 64}))
				for i, p := range pred {
					m := got.Stages[i].Stage
					if m.Concurrency != p.Concurrency {
						t.Fatalf("stage %d measured C=%d, predicted C=%d", i, m.Concurrency, p.Concurrency)
					}
					for _, fig := range calibrated {
						e, ok := p.Figure(fig.name)
						if !ok {
							t.Fatalf("C=%d: no %s predicted", p.Concurrency, fig.name)
						}
						want := fig.of(&m)
						r := row{covered: e.Covers(want)}
						r.text = fmt.Sprintf("| %s | %d | %s | %s (%s–%s) | %s | %+.1f%% | %s |\n", prof.Name, p.Concurrency, fig.name, num(e.Value), num(e.Lo), num(e.Hi), num(want), 100*(e.Value/want-1), map[bool]string{true: "yes", false: "no"}[r.covered])
						rows[k] = append(rows[k], r)
					}
				}
			})
		}
	})
	cases, covered := 0, 0
	for _, rs := range rows {
		for _, r := range rs {
			cases++
			if r.covered {
				covered++
			}
			b.WriteString(r.text)
		}
	}
	if cases != len(profiles)*2*len(calibrated) {
		t.Fatalf("%d cases, want %d", cases, len(profiles)*2*len(calibrated))
	}
	fmt.Fprintf(&b, "\n%d of %d intervals cover the measurement (%.0f%%).\n", covered, cases, 100*float64(covered)/float64(cases))
	// The seed article's own table, fitted at its C = 1, 4, 16: its C = 32
	// (2156.4 tok/s aggregate) must fall inside the interval.
	art, err := bench.Twin(context.Background(), bench.TwinConfig{Baseline: baseline.Find(baseline.Builtin(), "seed-qwen3.5-397b-8x-rtxpro6000"), FitLevels: []int{1, 4, 16}, Levels: []int{32}})
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString("\nThe seed article's table, fitted at C = 1, 4, 16:\n\n| C | figure | predicted (95%) | the article | error | covered |\n|--:|---|---|--:|--:|:-:|\n")
	p := art.Predicted[0]
	for i, f := range p.Figures {
		if i >= len(p.Measured) {
			break
		}
		in := "no"
		if f.Covers(p.Measured[i]) {
			in = "yes"
		}
		fmt.Fprintf(&b, "| %d | %s | %s (%s–%s) | %s | %+.1f%% | %s |\n", p.Concurrency, f.Name, num(f.Value), num(f.Lo), num(f.Hi), num(p.Measured[i]), 100*(f.Value/p.Measured[i]-1), in)
	}
	if agg, _ := p.Figure("aggregate tok/s"); len(p.Measured) == 0 || p.Measured[0] != 2156.4 || !agg.Covers(p.Measured[0]) {
		t.Errorf("the article's C=32: predicted %+v, the article %v: want 2156.4 inside", agg, p.Measured)
	}
	t.Log("\n" + b.String())
	if file := os.Getenv("TOKPERF_TWIN_TABLE"); file != "" {
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(sim.Profiles()) < 4 {
		t.Errorf("%d built-in profiles: the calibration is meant to cover every one", len(sim.Profiles()))
	}
	if float64(covered) < coverage*float64(cases) {
		t.Errorf("%d of %d intervals cover the measurement, want at least %.0f%%", covered, cases, 100*coverage)
	}
}

// num is a figure with four significant digits, never in e-notation.
func num(v float64) string {
	if math.Abs(v) >= 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}
