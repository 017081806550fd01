package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/results"
)

// tokperf soak against a simulator that slows down at minute 8: the slice
// table, the verdict with the change point and the leak, the same model
// from the file, and the slices as CSV.
//
// Serial: t.Chdir.
func TestVirtualSoak(t *testing.T) {
	profile, _ := filepath.Abs(filepath.Join("testdata", "degrading.yaml"))
	t.Chdir(t.TempDir())
	out, errw, code := runVirtual(t, "soak", "--sim-profile", profile, "-c", "4", "--duration", "16m", "--output-tokens", "10", "--input-tokens", "16", "-o", "soak.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	golden(t, "soak-degrading.stdout", out)
	for _, want := range []string{"C=4: 17 time slices of 1m0s", "stability C=4: degrading: ", "at 8m (change point", "server memory +0.47 GB over 14m [0.47, 0.47]", "(change point, 8.0 tok/s → 5.3 tok/s)"} {
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
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"soak", "--duration", "3m"}, "at least 6 slices"},
		{[]string{"soak", "-c", "1,2"}, "soak is one stage"},
		{[]string{"run", "--slice", "1m"}, "--slice needs --duration"},
		{[]string{"sweep", "--slice", "1m", "--duration", "10m", "--until-saturated"}, "does not mix with --until-saturated"},
		{[]string{"run", "--repeat", "0"}, "--repeat 0: want 1 or more, at most 1000"},
		{[]string{"run", "--slice", "10ms", "--duration", "1m"}, "under a second"},
	} {
		_, errw, code := runVirtual(t, tc.args...)
		if code != exitUsage || !strings.Contains(errw, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, errw, tc.want)
		}
	}
}

// The real binary, killed with SIGKILL in the middle of a soak: every
// slice line it wrote reads back whole, and report renders them.
func TestBinarySoakKilled(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("real time: a soak of the real binary, killed after 3 slices")
	}
	bin := buildBinary(t)
	file := filepath.Join(t.TempDir(), "soak.jsonl")
	cmd := exec.Command(bin, "soak", "--sim-profile", "tiny", "-c", "2", "--output-tokens", "20", "--slice", "1s", "--duration", "1m", "-o", file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second) // wide: a busy machine starts the binary and the simulator slowly
	for {
		b, _ := os.ReadFile(file)
		if bytes.Count(b, []byte(`{"type":"slice"`)) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no three slices after 90 s:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill() // SIGKILL: no end line, perhaps a line cut short
	cmd.Wait()
	progress := strings.Count(stderr.String(), " slice ")
	r, f, err := results.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for r.Next() {
	}
	if r.Err() != nil || r.End() != nil {
		t.Fatalf("reading the killed soak: %v, end %+v", r.Err(), r.End())
	}
	got := r.Slices()
	// Every slice announced on stderr was written before it was announced.
	if len(got) < 3 || len(got) < progress {
		t.Fatalf("%d slices read back, %d announced", len(got), progress)
	}
	// A machine busy with other work may starve the simulator for a whole
	// second, leaving a slice without a finished request: each slice must
	// be in order and whole, and the run as a whole must have measured.
	measured := 0
	for i, s := range got {
		if s.Index != i || (s.Requests > 0) != (s.TTFT.N > 0 || s.Errors > 0) {
			t.Errorf("slice %d: %+v", i, s)
		}
		measured += s.Requests
	}
	if measured == 0 {
		t.Errorf("no slice has a request: %+v", got)
	}
	out, err := exec.Command(bin, "report", file).Output()
	if err != nil || !strings.Contains(string(out), "time slices of 1s") || !strings.Contains(string(out), "has no end line") {
		t.Errorf("report of the killed soak: %v\n%s", err, out)
	}
}

// A live sliced run prints the model its file folds into, and an open
// loop can be sliced too.
//
// Serial: t.Chdir.
func TestVirtualSlicedOpenLoopEqualsFile(t *testing.T) {
	profile, _ := filepath.Abs(filepath.Join("testdata", "degrading.yaml"))
	t.Chdir(t.TempDir())
	live, errw, code := runVirtual(t, "run", "--sim-profile", profile, "--rate", "0.5", "--duration", "8m", "--slice", "1m", "--output-tokens", "10", "--format", "json", "-o", "open.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errw)
	}
	saved, _, code := runVirtual(t, "report", "open.jsonl", "--format", "json")
	if code != 0 || live != saved {
		t.Errorf("the live model and the file's differ (exit %d):\n%s\n%s", code, live, saved)
	}
	if !strings.Contains(live, `"slices": [`) || !strings.Contains(live, `"stability": {`) || !strings.Contains(live, `"rate": 0.5`) {
		t.Errorf("no slices or stability in the open loop's model:\n%.2000s", live)
	}
}

// --slice on a sweep slices every level and judges each.
func TestVirtualSlicedSweep(t *testing.T) {
	t.Parallel()
	profile := filepath.Join(t.TempDir(), "flat.yaml")
	os.WriteFile(profile, []byte("name: flat\ndecode: {linear: {a_ms: 500, c_ms: 5}}\nprefill: {per_token_us: 20}\njitter: 0.05\n"), 0o644)
	out, errw, code := runVirtual(t, "sweep", "--sim-profile", profile, "-c", "1,2", "--duration", "7m", "--slice", "1m", "--output-tokens", "10", "-o", t.TempDir()+"/s.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errw)
	}
	for _, want := range []string{"C=1: 8 time slices of 1m0s", "C=2: 8 time slices of 1m0s", "stability C=1: ", "stability C=2: ", "verdict: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The profile is flat: each level is stable, or (C=1: about 13
	// requests a slice) too short to tell stable from a drift; never
	// degrading or improving.
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "stability C=") && !strings.Contains(line, ": stable: ") && !strings.Contains(line, ": too short to judge: ") {
			t.Errorf("a flat profile judged %q", line)
		}
	}
}

// Steps of exactly 100 ms end on every slice boundary: requests and
// scrapes at the moment a slice ends count in the next, so two runs in
// virtual time give the same model.
func TestVirtualSlicesAreDeterministic(t *testing.T) {
	t.Parallel()
	profile := filepath.Join(t.TempDir(), "exact.yaml")
	os.WriteFile(profile, []byte("name: exact\ndecode: {linear: {a_ms: 100, c_ms: 0}}\nprefill: {per_token_us: 0.001}\n"), 0o644)
	var outs []string
	for range 2 {
		out, errw, code := runVirtual(t, "soak", "--sim-profile", profile, "-c", "2", "--duration", "6m", "--output-tokens", "7", "--input-tokens", "4", "--format", "json", "-o", filepath.Join(t.TempDir(), "d.jsonl"))
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, errw)
		}
		// The result file's name differs; everything else must not.
		outs = append(outs, out[strings.Index(out, `"setup"`):])
	}
	if outs[0] != outs[1] {
		t.Errorf("two runs in virtual time differ:\n%s\n%s", outs[0], outs[1])
	}
}
