package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
)

// writeRun writes a result file whose stage at concurrency c has the given
// aggregate tok/s: n requests over a 10 s window.
func writeRun(t *testing.T, path string, setup record.Setup, aggs map[int]float64) {
	t.Helper()
	w, err := results.Create(path, results.Header{Tool: "tokperf", Version: Version(), Setup: setup})
	if err != nil {
		t.Fatal(err)
	}
	id := 0
	for c, agg := range aggs {
		for i := range c {
			r := record.New(id)
			id++
			r.Concurrency, r.Sent, r.Done = c, 0, 10*time.Second
			r.AddChunk(time.Second, 1)
			r.AddChunk(10*time.Second, 1)
			r.OutputTokens = int(agg * 10 / float64(c))
			if i == 0 {
				r.OutputTokens += int(agg*10+0.5) - r.OutputTokens*c
			}
			r.Status, r.OutputSource = record.StatusOK, record.SourceUsage
			w.Write(r)
		}
	}
	w.Close(false)
}

func seedSetup() record.Setup {
	return record.Setup{Command: "sweep", Model: "Qwen3.5-397B-A17B-NVFP4", GPUs: 8, GPU: "RTX PRO 6000 Blackwell",
		Endpoint: "generate", Server: record.Server{Engine: "sglang", Info: map[string]any{"speculative_algorithm": nil}},
		Workload: record.Workload{InputTokens: 128, OutputTokens: 1000}, Load: record.Load{Concurrency: []int{32}}}
}

func runCLI(t *testing.T, args ...string) (string, string, int) {
	var out, errw bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(""), &out, &errw)
	return out.String(), errw.String(), code
}

// The seed article's comparison, done right: 1.57× in aggregate, 0.79× per
// GPU, context only, and the "3x" claim corrected.
func TestCompareCatid(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "seed.jsonl")
	writeRun(t, path, seedSetup(), map[int]float64{32: 2156.4})
	out, errw, code := runCLI(t, "compare", path, "--baseline", "catid-qwen3.5-4gpu", "--claim", "3x")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	golden(t, "compare-catid.stdout", strings.ReplaceAll(out, path, "seed.jsonl"))
	for _, want := range []string{"2156.4 / 1373.0 = 1.57×", "269.6 / 343.3 = 0.79× per GPU", "verdict: context only", "the claim 3× is wrong"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestCompareSameSetupIsComparable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeRun(t, dir+"/a.jsonl", seedSetup(), map[int]float64{32: 2000})
	writeRun(t, dir+"/b.jsonl", seedSetup(), map[int]float64{32: 2100})
	out, errw, code := runCLI(t, "compare", dir+"/a.jsonl", dir+"/b.jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	if !strings.Contains(out, "verdict: comparable\n") {
		t.Errorf("same setups are not called comparable:\n%s", out)
	}
}

func TestBadBaselinesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mine.yaml")
	os.WriteFile(path, []byte("- name: mine\n  gpus: 2\n  points:\n    - {concurrency: 0, aggregate_tok_s: 10}\n"), 0o644)
	_, errw, code := runCLI(t, "baselines", "--baselines", path)
	if code == 0 || !strings.Contains(errw, path+":4: [0].points[0].concurrency: must be at least 1") {
		t.Errorf("exit %d, stderr %q", code, errw)
	}
}

// Two runs of the same profile compare as ~; seed against seed-mtp at C=1
// is significantly faster (virtual time, so the test is quick).
func TestCompareABSignificance(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, r := range []struct{ profile, seed, file string }{{"seed", "1", "a"}, {"seed", "2", "b"}, {"seed-mtp", "1", "m"}} {
		if _, errw, code := runVirtual(t, "run", "--sim-profile", r.profile, "-c", "1", "--requests", "8", "--output-tokens", "200", "--seed", r.seed, "-o", dir+"/"+r.file+".jsonl"); code != 0 {
			t.Fatalf("%s: %s", r.profile, errw)
		}
	}
	out, errw, code := runCLI(t, "compare", dir+"/a.jsonl", dir+"/b.jsonl")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	golden(t, "compare-ab.stdout", strings.ReplaceAll(out, dir+"/", ""))
	golden(t, "compare-ab.stdout", strings.ReplaceAll(out, dir+"/", ""))
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| 1 |") && !strings.Contains(line, "| ~") {
			t.Errorf("same profile, a significant difference: %s", line)
		}
	}
	out, _, _ = runCLI(t, "compare", dir+"/a.jsonl", dir+"/m.jsonl")
	found := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "| 1 | decode tok/s p50 |") {
			found = true
			if strings.Contains(line, "| ~") || !strings.Contains(line, "×") {
				t.Errorf("MTP at C=1 not significantly faster: %s", line)
			}
		}
	}
	if !found {
		t.Errorf("no decode row:\n%s", out)
	}
}

// --until-saturated doubles until the server's own /metrics show its cap
// (at most 24 running while requests waited, at C=32), then measures the
// cap and stops there: saturation is at the cap, and no level past it
// (45, 64) is run or advised.
func TestUntilSaturated(t *testing.T) {
	t.Parallel()
	out, errw, code := runVirtual(t, "sweep", "--sim-profile", "testdata/capped-24.yaml", "-c", "1,4", "--until-saturated", "--output-tokens", "40", "-o", t.TempDir()+"/u.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	for _, level := range []string{"|   8 |", "|  16 |", "|  24 |", "|  32 |"} {
		if !strings.Contains(out, level) {
			t.Errorf("level %s was not run:\n%s", level, out)
		}
	}
	for _, level := range []string{"|  45 |", "|  48 |", "|  64 |"} {
		if strings.Contains(out, level) {
			t.Errorf("level %s past the cap was run:\n%s", level, out)
		}
	}
	m := regexp.MustCompile(`bends at C≈(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no knee:\n%s", out)
	}
	if k, _ := strconv.Atoi(m[1]); k < 12 || k > 48 {
		t.Errorf("knee at C≈%d, the server's capacity is 24", k)
	}
	if !strings.Contains(out, "verdict: saturated at C=24, the server's cap: it runs at most 24 requests (its /metrics at C=32") {
		t.Errorf("not called saturated at the cap:\n%s", out)
	}
	if !strings.Contains(errw, "--until-saturated: C=24, the cap, last") {
		t.Errorf("the search did not say it ends at the cap:\n%s", errw)
	}
}

// A server that runs fewer requests than the client sends is reported as
// capped, with its queue, from its own /metrics.
func TestCappedServerFromMetrics(t *testing.T) {
	t.Parallel()
	out, errw, code := runVirtual(t, "run", "--sim-profile", "testdata/capped-24.yaml", "-c", "32", "--requests", "96", "--output-tokens", "200", "-o", t.TempDir()+"/c.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	for _, want := range []string{"server metrics", "running ≤ 24, waiting ≤ 8", "the server ran at most 24 requests while 32 were sent", "up to 8 waited"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// report and compare stop at Ctrl-C (exit 130), however large the file.
func TestReportInterrupted(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "r.jsonl")
	if _, errw, code := runVirtual(t, "run", "--sim-profile", "tiny", "--requests", "9000", "-c", "8", "--output-tokens", "2", "-o", file); code != 0 {
		t.Fatal(errw)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, args := range [][]string{{"report", file}, {"compare", file, file}} {
		var out, errw bytes.Buffer
		if code := Run(ctx, args, strings.NewReader(""), &out, &errw); code != exitInterrupted {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitInterrupted, errw.String())
		}
	}
}
