package cli

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/sim"
)

func twinOf(t *testing.T, out string) *analyze.Twin {
	t.Helper()
	var m analyze.Twin
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if m.Schema != analyze.TwinSchema {
		t.Fatalf("schema %q", m.Schema)
	}
	return &m
}

// The seed article's table, C = 1, 4, 16 only: the twin predicts C = 32,
// and sets the article's own C = 32 beside it. The article's decode speed
// at C = 32 (81.2 tok/s) lies below the line its C = 4 and 16 draw (the
// step time bends upward past C = 16), which no fit to C ≤ 16 can know:
// the estimate, the straight extension, is high, and the interval holds
// the article's figure because it spans a step curve turning steeper.
func TestPredictTheArticleFromItsFirstLevels(t *testing.T) {
	t.Parallel()
	skipTwinUnderRace(t)
	out, errw, code := runCLI(t, "predict", "--baseline", "seed-qwen3.5-397b-8x-rtxpro6000", "--fit-levels", "1,4,16", "-c", "32", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	m := twinOf(t, out)
	if len(m.Levels) != 3 || len(m.Predicted) != 1 {
		t.Fatalf("fitted %d levels, predicted %d", len(m.Levels), len(m.Predicted))
	}
	for _, l := range m.Levels {
		for _, f := range l.Figures[:2] { // aggregate and decode: the table's own
			if math.Abs(f.Error) > 0.05 {
				t.Errorf("C=%d: %s twin %.1f vs the table's %.1f", l.Concurrency, f.Name, f.Twin, f.Measured)
			}
		}
	}
	p := m.Predicted[0]
	agg, _ := p.Figure("aggregate tok/s")
	if len(p.Measured) == 0 || p.Measured[0] != 2156.4 {
		t.Fatalf("the article's C=32 is not set beside the prediction: %+v", p)
	}
	t.Logf("C=32 predicted %.1f (%.1f–%.1f), the article measured %.1f (%+.1f%%)", agg.Value, agg.Lo, agg.Hi, p.Measured[0], 100*(agg.Value/p.Measured[0]-1))
	if !(agg.Value > p.Measured[0]) || !agg.Covers(p.Measured[0]) {
		t.Errorf("C=32: predicted %.1f (%.1f–%.1f) against the article's 2156.4: want the estimate high and the interval holding it", agg.Value, agg.Lo, agg.Hi)
	}
	if m.Shape == nil || m.Shape.Pinned || len(p.Figures[0].Growths) != len(m.Shape.Growths) {
		t.Errorf("the shape past C=16 should be said not pinned, with a figure per growth: %+v, %v", m.Shape, p.Figures[0].Growths)
	}
}

// Fitted to the whole table, the twin's verdict asks for C = 48 and 64
// and quotes its prediction of C = 48; C = 64, whose interval spans a
// running cap the table does not state (wider than ±25%), is named as a
// level to measure instead of a number.
func TestArticleVerdictQuotesThePrediction(t *testing.T) {
	t.Parallel()
	skipTwinUnderRace(t)
	out, errw, code := runCLI(t, "predict", "--baseline", "seed-qwen3.5-397b-8x-rtxpro6000", "-c", "48,64")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	var verdict string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "verdict: ") {
			verdict = l
		}
	}
	for _, want := range []string{"not saturated", "try C=48 and C=64", "predicts C=48 ", "; C=64 (", "cannot be predicted from these levels (interval wider than ±25%): measure C=64"} {
		if !strings.Contains(verdict, want) {
			t.Errorf("verdict lacks %q: %q", want, verdict)
		}
	}
}

// fit writes a profile the simulator loads; predict at a level the run
// measured but the fit left out sets the two side by side; bad input
// gets a one-line answer.
func TestFitAndPredictCommands(t *testing.T) {
	t.Parallel()
	skipTwinUnderRace(t)
	dir := t.TempDir()
	res := filepath.Join(dir, "r.jsonl")
	if out, errw, code := runVirtual(t, "sweep", "--sim-profile", "llama-3.1-8b-h100", "-c", "1,4,16,32", "--output-tokens", "64", "-o", res); code != 0 {
		t.Fatalf("sweep exit %d\n%s\n%s", code, out, errw)
	}
	prof := filepath.Join(dir, "twin.yaml")
	out, errw, code := runCLI(t, "fit", res, "--fit-levels", "1,4,16", "-o", prof)
	if code != 0 {
		t.Fatalf("fit exit %d: %s", code, errw)
	}
	if !strings.Contains(out, "profile: "+prof) || !strings.Contains(out, "decode.table[batch 16].step_ms") {
		t.Errorf("fit's report:\n%s", out)
	}
	if _, err := sim.LoadProfile(prof); err != nil {
		t.Fatalf("the written profile does not load: %v", err)
	}
	out, errw, code = runCLI(t, "predict", res, "--fit-levels", "1,4,16", "-c", "32", "--format", "json")
	if code != 0 {
		t.Fatalf("predict exit %d: %s", code, errw)
	}
	p := twinOf(t, out).Predicted[0]
	agg, _ := p.Figure("aggregate tok/s")
	if len(p.Measured) == 0 || !agg.Covers(p.Measured[0]) || math.Abs(agg.Value/p.Measured[0]-1) > 0.05 {
		t.Errorf("C=32 predicted %+v, measured %v", agg, p.Measured)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"predict", res}, "give the levels to predict"},
		{[]string{"fit"}, "want: tokperf fit RESULT.jsonl"},
		{[]string{"fit", res, "--fit-levels", "8"}, "none of the levels [8]"},
		{[]string{"fit", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl"},
		{[]string{"predict", "--baseline", "nope", "-c", "8"}, `no baseline "nope"`},
	} {
		_, errw, code := runCLI(t, c.args...)
		first, _, _ := strings.Cut(errw, "\n")
		if code == 0 || !strings.Contains(first, c.want) || strings.Contains(errw, "goroutine") {
			t.Errorf("%v: exit %d, stderr %q, want a first line with %q", c.args, code, errw, c.want)
		}
	}
}

// --until-saturated fits the twin to the given levels, predicts each level
// it adds before running it, and the report sets each beside what it
// measured; the file's report says the same.
func TestUntilSaturatedChecksTheTwin(t *testing.T) {
	t.Parallel()
	skipTwinUnderRace(t) // and a race build makes no twin during a sweep
	res := filepath.Join(t.TempDir(), "r.jsonl")
	out, errw, code := runVirtual(t, "sweep", "--sim-profile", "llama-3.1-8b-h100", "-c", "1,4,16", "--output-tokens", "64", "--until-saturated", "--max-concurrency", "64", "-o", res)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	for _, want := range []string{"the twin fitted to C=1, 4, 16 predicted the levels --until-saturated added", "--until-saturated: C=32 next; the twin fitted to C=[1 4 16] "} {
		if !strings.Contains(out+errw, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, out, errw)
		}
	}
	var checked int
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "aggregate tok/s") && strings.HasSuffix(strings.TrimSpace(l), "|") && (strings.Contains(l, "|  32 |") || strings.Contains(l, "|  64 |")) {
			checked++
			if !strings.Contains(l, " yes |") {
				t.Errorf("the twin's aggregate prediction missed: %s", l)
			}
		}
	}
	if checked != 2 {
		t.Errorf("%d checked aggregate rows, want C=32 and C=64:\n%s", checked, out)
	}
	again, errw, code := runCLI(t, "report", res)
	if code != 0 {
		t.Fatalf("report exit %d: %s", code, errw)
	}
	cut := func(s string) string {
		s = s[strings.Index(s, "the twin fitted to C="):]
		s, _, _ = strings.Cut(s, "results: ")
		return s
	}
	if cut(again) != cut(out) {
		t.Errorf("the file's report differs from the live one:\n%s\n---\n%s", cut(out), cut(again))
	}
}

// skipTwinUnderRace skips a test of the twin's numerics in a race build,
// where its replays run fifteen times slower.
func skipTwinUnderRace(t *testing.T) {
	if raceEnabled {
		t.Skip("the twin's replays are one goroutine's numerics, fifteen times slower under the race detector")
	}
}
