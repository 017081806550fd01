package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tokperf soak against a simulator that slows down at minute 8: the slice
// table, the verdict with the change point and the leak, the same model
// from the file, and the slices as CSV.
func TestVirtualSoak(t *testing.T) {
	profile, _ := filepath.Abs(filepath.Join("testdata", "degrading.yaml"))
	t.Chdir(t.TempDir())
	out, errw, code := runVirtual(t, "soak", "--sim-profile", profile, "-c", "4", "--duration", "16m", "--output-tokens", "10", "--input-tokens", "16", "-o", "soak.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	golden(t, "soak-degrading.stdout", out)
	for _, want := range []string{"C=4: 17 time slices of 1m00s", "stability C=4: degrading: ", "from minute 8 (change point", "server memory +2.00 GB/h", "(change point, 8.0 tok/s → 5.3 tok/s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("the soak's report lacks %q", want)
		}
	}
	if !strings.Contains(errw, "C=4 slice 3 (3m00s): ") {
		t.Errorf("no progress line per slice:\n%s", errw)
	}
	if strings.Contains(out, "warning: C=4: degrading") {
		t.Error("the text report repeats the stability verdict as a warning")
	}
	live, _, code := runVirtual(t, "report", "soak.jsonl", "--format", "json")
	if code != 0 || !strings.Contains(live, `"slices": [`) || !strings.Contains(live, `"kind": "degrading"`) {
		t.Fatalf("report --format json: exit %d\n%s", code, live)
	}
	csv, _, _ := runVirtual(t, "report", "soak.jsonl", "--format", "csv")
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	if len(lines) != 18 || !strings.HasPrefix(lines[0], "stage,slice,from_s,length_s,measured,requests") || !strings.HasPrefix(lines[1], "C=4,0,0,60,warm-up,") {
		t.Errorf("csv of %d lines:\n%s", len(lines), csv)
	}
	if _, err := os.Stat("soak.jsonl"); err != nil {
		t.Error(err)
	}
}

func TestSoakFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"soak", "--duration", "3m"}, "at least 6 slices"},
		{[]string{"soak", "-c", "1,2"}, "soak is one stage"},
		{[]string{"run", "--slice", "1m"}, "--slice needs --duration"},
		{[]string{"sweep", "--slice", "1m", "--duration", "10m", "--until-saturated"}, "does not mix with --until-saturated"},
		{[]string{"run", "--repeat", "0"}, "--repeat 0: want 1 or more"},
		{[]string{"run", "--slice", "10ms", "--duration", "1m"}, "under a second"},
	} {
		_, errw, code := runVirtual(t, tc.args...)
		if code != exitUsage || !strings.Contains(errw, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, errw, tc.want)
		}
	}
}
