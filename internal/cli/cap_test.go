package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A llama.cpp server with 4 slots states them (/props total_slots): a
// sweep that reaches 4 is saturated at the cap, --until-saturated runs
// nothing past it, and no advice names C=6 or C=8.
func TestStatedSlotsEndTheSearch(t *testing.T) {
	t.Parallel()
	prof := filepath.Join(t.TempDir(), "slots-4.yaml")
	if err := os.WriteFile(prof, []byte("name: slots-4\nengine: llamacpp\nmodel: m\nmax_running: 4\ndecode: {linear: {a_ms: 5, c_ms: 0.5}}\nprefill: {per_token_us: 10}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errw, code := runVirtual(t, "sweep", "--sim-profile", prof, "-c", "1,2", "--until-saturated", "--output-tokens", "40", "-o", t.TempDir()+"/r.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	if !strings.Contains(out, "verdict: saturated at C=4, the server's cap: it runs at most 4 requests (/props total_slots)") {
		t.Errorf("not saturated at the stated cap:\n%s", out)
	}
	for _, not := range []string{"|   8 |", "|   6 |", "try C=6", "try C=8", "C=8 next"} {
		if strings.Contains(out+errw, not) {
			t.Errorf("%q past the 4 slots:\n%s\n%s", not, out, errw)
		}
	}
}
