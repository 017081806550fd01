package cli

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
)

// report, compare and compare --baseline render html pages; report draws
// several files on one page and one chart as a png with --chart and -o.
func TestHTMLAndPNGFormats(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	writeLevels(t, a, []int{1, 4, 32}, []float64{170, 600, 2156.4})
	writeLevels(t, b, []int{1, 4, 32}, []float64{180, 650, 2300})
	out, errw, code := runCLI(t, "report", a, b, "--format", "html")
	if code != 0 || !strings.Contains(out, `data-series="a"`) || !strings.Contains(out, `data-series="b"`) || strings.Count(out, "<!DOCTYPE html>") != 1 {
		t.Errorf("report of two files: exit %d %s", code, errw)
	}
	img := filepath.Join(dir, "pareto.png")
	if _, errw, code := runCLI(t, "report", a, b, "--format", "png", "--chart", "pareto", "-o", img); code != 0 {
		t.Fatalf("png: exit %d %s", code, errw)
	}
	raw, _ := os.ReadFile(img)
	if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
		t.Errorf("pareto.png: %v", err)
	}
	bad := filepath.Join(dir, "bad.png")
	_, errw, code = runCLI(t, "report", a, "--format", "png", "--chart", "nope", "-o", bad)
	if _, err := os.Stat(bad); code != exitUsage || !strings.Contains(errw, `no chart "nope"`) || !strings.Contains(errw, "pareto") || err == nil {
		t.Errorf("unknown chart: exit %d, %s, file left: %v", code, errw, err == nil)
	}
	out, errw, code = runCLI(t, "compare", a, b, "--format", "html")
	if code != 0 || !strings.Contains(out, "A/B comparison") || !strings.Contains(out, `data-chart="pareto"`) {
		t.Errorf("compare: exit %d %s", code, errw)
	}
	out, errw, code = runCLI(t, "compare", a, "--baseline", "catid-qwen3.5-4gpu", "--format", "html")
	if code != 0 || !strings.Contains(out, "2156.4 / 1373.0 = 1.57×") || !strings.Contains(out, "Setup (fairness)") || !strings.Contains(out, "baseline catid-qwen3.5-4gpu") {
		t.Errorf("compare --baseline: exit %d %s", code, errw)
	}
}

// writeLevels writes a result file of one stage per level, each with the
// aggregate tok/s given: c requests over a 10 s window.
func writeLevels(t *testing.T, path string, levels []int, aggs []float64) {
	t.Helper()
	w, err := results.Create(path, results.Header{Tool: "tokperf", Version: Version(), Setup: seedSetup()})
	if err != nil {
		t.Fatal(err)
	}
	id := 0
	for stage, c := range levels {
		for i := range c {
			r := record.New(id)
			id++
			r.Stage, r.Concurrency, r.Sent, r.Done = stage, c, 0, 10*time.Second
			r.AddChunk(time.Second, 1)
			r.AddChunk(10*time.Second, 1)
			r.OutputTokens = int(aggs[stage] * 10 / float64(c))
			if i == 0 {
				r.OutputTokens += int(aggs[stage]*10+0.5) - r.OutputTokens*c
			}
			r.Status, r.OutputSource = record.StatusOK, record.SourceUsage
			w.Write(r)
		}
	}
	w.Close(false)
}

// A live sweep's page is the page of its file read back: the timeline's
// sample does not depend on how the records came.
func TestSweepHTMLEqualsReportHTML(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "r.jsonl")
	live, errw, code := runVirtual(t, "sweep", "--sim-profile", "tiny", "-c", "1,8", "--requests", "40", "--output-tokens", "30", "--format", "html", "-o", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	saved, errr, code := runCLI(t, "report", file, "--format", "html")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errr)
	}
	if live != saved {
		t.Errorf("sweep --format html and report --format html differ (%d and %d bytes)", len(live), len(saved))
	}
	if !strings.Contains(live, `data-chart="timeline"`) || !strings.Contains(live, "All 40 measured requests of the stage.") {
		t.Error("the live page has no timeline of the stage's 40 requests")
	}
}
