package cli

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
)

// writeMillion writes a result file of a million measured requests over
// four stages (C=8, 16, 32, 64), 16 tokens each in 16 chunks, with a
// /metrics scrape and a reading of 8 GPUs every second, through the
// results writer.
func writeMillion(t *testing.T, path string) {
	t.Helper()
	setup := record.Setup{Command: "sweep", URL: "http://127.0.0.1:30000", Endpoint: "generate", Route: "/generate", Model: "m", GPUs: 8,
		Server: record.Server{Engine: "sglang"}, Workload: record.Workload{InputTokens: 128, OutputTokens: 16, IgnoreEOS: true}}
	w, err := results.Create(path, results.Header{Setup: setup})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	ms := time.Millisecond
	id := 0
	start := time.Duration(0)
	for stage, c := range []int{8, 16, 32, 64} {
		const n = 250_000
		step := 4*ms + time.Duration(c)*ms/8 // a step of the batch
		var end time.Duration
		for i := range n {
			r := record.New(id)
			id++
			r.Stage, r.Concurrency, r.Status, r.OutputTokens = stage, c, record.StatusOK, 16
			r.OutputSource, r.ChunkSource = record.SourceUsage, record.SourceContinuous
			r.Sent = start + time.Duration(i/c)*17*step + time.Duration(rng.IntN(1000))*time.Microsecond
			r.Scheduled = r.Sent
			at := r.Sent + 20*ms + time.Duration(c)*ms
			for range 16 {
				r.AddChunk(at, 1)
				at += step + time.Duration(rng.IntN(500))*time.Microsecond
			}
			r.FirstContent, r.Done = r.FirstToken, r.LastToken
			end = max(end, r.Done)
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		var metrics []record.ServerSample
		var gpus []record.GPUSample
		for at := start; at <= end; at += time.Second {
			metrics = append(metrics, record.ServerSample{Stage: stage, At: at, Values: map[string]float64{
				"sglang:num_running_reqs": float64(c), "sglang:num_queue_reqs": 0, "sglang:token_usage": 0.01 * float64(c)}})
			for g := range 8 {
				gpus = append(gpus, record.GPUSample{At: at, Index: g, Name: "H100", MemUsedMiB: 70000, MemTotalMiB: 81559, UtilPct: 90, PowerW: 400 + float64(c)})
			}
		}
		if err := w.WriteMetrics(metrics); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteGPU(stage, gpus); err != nil {
			t.Fatal(err)
		}
		start = end + time.Second
	}
	if err := w.Close(false); err != nil {
		t.Fatal(err)
	}
}

// The html report of a million-request file is under 5 MB, samples its
// timelines and says so, and renders in Chromium in under 10 s. It writes
// a file of about 640 MB and takes a minute: run it with
// TOKPERF_MILLION=1 (the figures are in docs/METRICS.md).
//
// Serial: real time: Chromium must paint the page within 10 s.
func TestMillionRequestHTML(t *testing.T) {
	if os.Getenv("TOKPERF_MILLION") != "1" {
		t.Skip("writes a 640 MB result file: TOKPERF_MILLION=1 runs it")
	}
	dir := t.TempDir()
	res := filepath.Join(dir, "million.jsonl")
	began := time.Now()
	writeMillion(t, res)
	info, _ := os.Stat(res)
	t.Logf("wrote %d requests, %.0f MB, in %.1f s", 1_000_000, float64(info.Size())/1e6, time.Since(began).Seconds())
	page := filepath.Join(dir, "million.html")
	began = time.Now()
	if _, errw, code := runCLI(t, "report", res, "--format", "html", "-o", page); code != 0 {
		t.Fatalf("report: %s", errw)
	}
	html, _ := os.ReadFile(page)
	t.Logf("report --format html: %.2f MB in %.1f s", float64(len(html))/1e6, time.Since(began).Seconds())
	if len(html) >= 5e6 {
		t.Errorf("the page is %.2f MB, over 5 MB", float64(len(html))/1e6)
	}
	if !strings.Contains(string(html), "A sample of 1000 of the stage's 250000 measured requests") {
		t.Error("the page does not say its timelines are sampled")
	}
	if os.Getenv("TOKPERF_REQUIRE_BROWSER") != "1" {
		if _, err := os.Stat("/usr/bin/chromium"); err != nil {
			t.Log("no chromium: render time not measured")
			return
		}
	}
	bin := chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	c, err := dialCDP(ctx, startChromium(t, ctx, bin))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.call(ctx, "Page.enable", map[string]any{}, nil); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	if err := c.call(ctx, "Page.navigate", map[string]any{"url": "file://" + page}, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.waitEvent(ctx, "Page.loadEventFired"); err != nil {
		t.Fatal(err)
	}
	// Layout and paint of every chart: show every stage, measure each SVG,
	// and wait for the next two frames.
	var drawn int
	err = c.eval(ctx, `new Promise(done => {
		document.querySelectorAll(".stage").forEach(p => p.hidden = false);
		let n = 0; document.querySelectorAll("svg.chart").forEach(s => { if (s.getBoundingClientRect().width > 0) n++; });
		requestAnimationFrame(() => requestAnimationFrame(() => done(n)));
	})`, &drawn)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	t.Logf("chromium: %d charts loaded, laid out and painted in %.2f s", drawn, took.Seconds())
	if took > 10*time.Second {
		t.Errorf("rendering took %.1f s, over 10 s", took.Seconds())
	}
	if drawn < 5+4*6 {
		t.Errorf("%d charts drawn, want the 5 of the run and 6 per stage", drawn)
	}
}
