package cli

import (
	"strings"
	"testing"
)

// From two levels the twin's step curve is a guess: the verdict quotes no
// prediction; from three it does (a number, or the level to measure).
func TestVerdictQuotesTheTwinFromThreeLevels(t *testing.T) {
	t.Parallel()
	skipTwinUnderRace(t) // a race build makes no twin during a sweep
	for _, tc := range []struct {
		levels string
		quoted bool
	}{{"1,4", false}, {"1,4,16", true}} {
		out, errw, code := runVirtual(t, "sweep", "--sim-profile", "tiny", "-c", tc.levels, "--output-tokens", "50", "-o", t.TempDir()+"/r.jsonl")
		if code != 0 {
			t.Fatalf("-c %s: exit %d\n%s\n%s", tc.levels, code, out, errw)
		}
		i := strings.Index(out, "verdict: not saturated")
		if i < 0 {
			t.Fatalf("-c %s: no rising verdict:\n%s", tc.levels, out)
		}
		verdict, _, _ := strings.Cut(out[i:], "\n")
		if got := strings.Contains(verdict, "the twin fitted to these levels") || strings.Contains(verdict, "cannot be predicted"); got != tc.quoted {
			t.Errorf("-c %s: the twin quoted %v, want %v: %s", tc.levels, got, tc.quoted, verdict)
		}
	}
}
