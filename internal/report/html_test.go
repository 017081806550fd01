package report

import (
	"bytes"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/baseline"
	"github.com/tokperf/tokperf/internal/record"
)

// goldenPNG holds an image to its golden file pixel by pixel, allowing a
// few pixels of anti-aliasing to differ (floating point may fuse
// differently on another processor).
func goldenPNG(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		os.WriteFile(path, got, 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	a, err := png.Decode(bytes.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	b, err := png.Decode(bytes.NewReader(want))
	if err != nil {
		t.Fatal(err)
	}
	if a.Bounds() != b.Bounds() {
		t.Fatalf("%s: size %v, golden %v", name, a.Bounds(), b.Bounds())
	}
	differ := 0
	r := a.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, _ := a.At(x, y).RGBA()
			r2, g2, b2, _ := b.At(x, y).RGBA()
			if absDiff(r1, r2)+absDiff(g1, g2)+absDiff(b1, b2) > 3*0x1000 {
				differ++
			}
		}
	}
	if limit := r.Dx() * r.Dy() / 1000; differ > limit {
		t.Errorf("%s: %d pixels differ from the golden file (at most %d may)", name, differ, limit)
	}
}

func absDiff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// Every chart of the page is there with its axes' units, and a marker's
// hover value and data attributes are the model's figure.
func TestHTMLChartsAndHoverValues(t *testing.T) {
	t.Parallel()
	r := run()
	var b bytes.Buffer
	if err := Render(&b, "html", r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, name := range []string{"throughput", "ttft", "itl", "tpot", "pareto", "timeline", "arrivals"} {
		if !strings.Contains(page, `data-chart="`+name+`"`) {
			t.Errorf("no %s chart", name)
		}
	}
	for _, unit := range []string{"aggregate output tok/s", "TTFT (ms)", "ITL (ms per token)", "tok/s per user", "output tok/s per GPU", "time since the stage's first send (s)"} {
		if !strings.Contains(page, unit) {
			t.Errorf("no axis %q", unit)
		}
	}
	if strings.Contains(page, "http://") && !strings.Contains(page, "http://www.w3.org/2000/svg") || strings.Contains(page, "src=") || strings.Contains(page, "<link") {
		t.Error("the page loads something from elsewhere")
	}
	want := "r, C=2: " + f1(r.Stages[1].AggregateTokS) + " tok/s aggregate"
	if !strings.Contains(page, `data-tip="`+want+`" data-x="2" data-y="`+strconv.FormatFloat(r.Stages[1].AggregateTokS, 'g', -1, 64)+`"`) {
		t.Errorf("no marker %q with its data", want)
	}
	if !strings.Contains(page, "verdict: "+r.Verdict.Text) || !strings.Contains(page, "All 4 measured requests of the stage.") {
		t.Error("verdict or timeline note missing")
	}
}

// The frontier holds the points no other beats on both axes.
func TestPareto(t *testing.T) {
	t.Parallel()
	ps := []point{{X: 100, Y: 10}, {X: 50, Y: 50}, {X: 40, Y: 40}, {X: 10, Y: 60}, {X: 50, Y: 20}, {X: math.NaN(), Y: 100}}
	got := pareto(ps)
	want := []bool{true, true, false, true, false, false}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("point %v: on the frontier %v, want %v", ps[i], got[i], want[i])
		}
	}
	line := frontierLine(ps, got)
	if len(line) != 3 || line[0].X != 10 || line[2].X != 100 {
		t.Errorf("frontier line %v", line)
	}
}

func TestAxisTicks(t *testing.T) {
	t.Parallel()
	a := newAxis([]float64{1, 4, 16, 32}, true, false)
	if a.lo != 1 || a.hi != 32 || strings.Join(a.tickLabels, ",") != "1,2,4,8,16,32" {
		t.Errorf("log axis %v..%v %v", a.lo, a.hi, a.tickLabels)
	}
	l := newAxis([]float64{0.012, 0.23}, false, true)
	if l.lo != 0 || l.hi != 0.25 || strings.Join(l.tickLabels, ",") != "0,0.05,0.10,0.15,0.20,0.25" {
		t.Errorf("linear axis %v..%v %v", l.lo, l.hi, l.tickLabels)
	}
	k := newAxis([]float64{0, 15210}, false, true)
	if strings.Join(k.tickLabels, ",") != "0,5000,10k,15k,20k" {
		t.Errorf("thousands %v", k.tickLabels)
	}
}

// A dash pattern cuts a line into drawn pieces of the pattern's lengths.
func TestDashed(t *testing.T) {
	t.Parallel()
	got := dashed([]float64{0, 0, 10, 0, 10, 10}, "3 1")
	if len(got) != 5 || got[0][2] != 3 || got[1][0] != 4 || got[1][2] != 7 {
		t.Errorf("%v", got)
	}
	// The third piece turns the corner at (10, 0).
	if p := got[2]; len(p) != 6 || p[0] != 8 || p[2] != 10 || p[3] != 0 || math.Abs(p[5]-1) > 1e-9 {
		t.Errorf("corner piece %v", got[2])
	}
}

// --chart picks one chart; an unknown name lists those there are.
func TestPNGPick(t *testing.T) {
	t.Parallel()
	r := run()
	for _, name := range []string{"", "ttft", "timeline", "timeline@C=1", "arrivals@2"} {
		var b bytes.Buffer
		if err := Render(&b, "png", Pick{Chart: name, Result: r}); err != nil {
			t.Errorf("%q: %v", name, err)
			continue
		}
		img, err := png.Decode(&b)
		if err != nil || img.Bounds().Dx() != int(chartW*pngScale) {
			t.Errorf("%q: %v %v", name, err, img)
		}
	}
	err := Render(&bytes.Buffer{}, "png", Pick{Chart: "nope", Result: r})
	if err == nil || !strings.Contains(err.Error(), "pareto, server") && !strings.Contains(err.Error(), "timeline@C=2") {
		t.Errorf("unknown chart: %v", err)
	}
	// Other formats render the result whole.
	var b bytes.Buffer
	if err := Render(&b, "csv", Pick{Chart: "ttft", Result: r}); err != nil || !strings.HasPrefix(b.String(), "stage,") {
		t.Errorf("csv of a pick: %v %q", err, b.String())
	}
}

// Several runs share the charts: a curve each, one frontier over all; a
// run with no GPU count is said to be plotted as one GPU.
func TestHTMLOfSeveralRunsAndComparisons(t *testing.T) {
	t.Parallel()
	a, b := run(), run()
	a.File, b.File = "a.jsonl", "b.jsonl"
	b.Setup.GPUs = 2
	var out bytes.Buffer
	if err := Render(&out, "html", Runs{a, b}); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	for _, want := range []string{`data-series="a"`, `data-series="b"`, "Pareto frontier", "b, C=2: ", "tok/s per GPU (" + f1(b.Stages[1].AggregateTokS) + " over 2 GPUs)", "<h2>Stages of b</h2>"} {
		if !strings.Contains(page, want) {
			t.Errorf("no %q", want)
		}
	}
	if p, _ := pageOf(Runs{a, b}); !strings.Contains(p.pareto().Note, "The GPU count of a is unknown") {
		t.Errorf("pareto note %q", p.pareto().Note)
	}
	c, err := analyze.Compare([]*analyze.Run{keep(a), keep(b)}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := Render(&out, "html", c); err != nil || !strings.Contains(out.String(), "A/B comparison") || !strings.Contains(out.String(), `data-chart="pareto"`) {
		t.Errorf("comparison: %v", err)
	}
	bl := &baseline.Baseline{Name: "article", GPUs: 8, Points: []baseline.Point{{Concurrency: 1, AggregateTokS: 100}, {Concurrency: 2, AggregateTokS: 150}}}
	bc, err := analyze.AgainstBaselineRun(b, bl, 0, "", "")
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := Render(&out, "html", bc); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Against baseline article", f1(b.Stages[1].AggregateTokS) + " / 150.0 = ", "Setup (fairness)", "baseline, C=2: 150.0 tok/s aggregate", "verdict: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("baseline page: no %q", want)
		}
	}
	e := &analyze.Experiment{Configs: []analyze.ExperimentConfig{{Name: "tp8", OK: true, Run: keep(a)}, {Name: "tp4", OK: true, Run: keep(b)}}}
	e.CompareConfigs([]int{1, 2})
	out.Reset()
	if err := Render(&out, "html", e); err != nil || !strings.Contains(out.String(), `data-series="tp4"`) {
		t.Errorf("experiment: %v", err)
	}
}

// keep is a run with the per-request samples a comparison needs.
func keep(r *analyze.Run) *analyze.Run {
	f := analyze.NewFold(r.Setup, r.File)
	f.KeepSamples()
	ms := 1e6
	for stage, c := range []int{1, 2} {
		for i := range 4 {
			rec := record.New(stage*4 + i)
			start := float64(i/c) * 100 * ms
			rec.Stage, rec.Concurrency, rec.Sent = stage, c, dur(start)
			for k := range 20 {
				rec.AddChunk(dur(start+10*ms+float64(k)*90*ms/19*float64(1+i%2)), 1)
			}
			rec.Done, rec.OutputTokens, rec.Status = rec.LastToken, 20, record.StatusOK
			f.Add(&rec)
		}
	}
	f.Integrity(false, true, false)
	return f.Run()
}

func dur(ns float64) time.Duration { return time.Duration(ns) }

// A stage with server and GPU readings over time gets their charts; an
// open-loop run is drawn against the offered rate on a linear axis.
func TestHTMLSeriesAndOpenLoop(t *testing.T) {
	t.Parallel()
	r := run()
	kv := 0.25
	r.Stages[1].Series = &analyze.Series{
		Server: []analyze.ServerPoint{{At: 0, Running: 2, Waiting: 1, KV: &kv}, {At: time.Second, Running: 2, KV: &kv}},
		GPU:    []analyze.GPUPoint{{At: 0, PowerW: 700, MemMiB: 2048, UtilPct: 90}, {At: time.Second, PowerW: 650, MemMiB: 2048}},
	}
	var b bytes.Buffer
	if err := Render(&b, "html", r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`data-chart="server"`, `data-chart="kv"`, `data-chart="gpu-power"`, `data-chart="gpu-memory"`, "0.0 s: KV cache 25.00% used", "1.0 s: 650 W", "0.0 s: 2.0 GiB used"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q", want)
		}
	}
	r.OpenLoop = true
	r.Stages[0].Rate, r.Stages[1].Rate = 2.5, 5
	p, _ := pageOf(r)
	c := p.throughput()
	if c.XLog || c.XLabel != "offered rate (requests/s)" || c.Series[0].Points[1].X != 5 {
		t.Errorf("open loop: %+v", c)
	}
	if _, err := p.find("gpu-power@rate=5/s"); err != nil {
		t.Error(err)
	}
}

// A result with nothing to draw gets an image that says so; a named chart
// it lacks is an error.
func TestPNGOfNothing(t *testing.T) {
	t.Parallel()
	empty := analyze.NewFold(record.Setup{}, "e.jsonl").Run()
	var b bytes.Buffer
	if err := Render(&b, "png", empty); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&b); err != nil {
		t.Error(err)
	}
	if err := Render(&bytes.Buffer{}, "png", Pick{Chart: "ttft", Result: empty}); err == nil {
		t.Error("a chart the result lacks was drawn")
	}
}

func BenchmarkHTML(b *testing.B) {
	r := run()
	for b.Loop() {
		Render(io.Discard, "html", r)
	}
}

func BenchmarkPNG(b *testing.B) {
	r := run()
	for b.Loop() {
		Render(io.Discard, "png", r)
	}
}

// PNG renders may run at once (a font face is not safe for concurrent use,
// so each raster has its own): every one gives the image a lone render does.
func TestPNGInParallel(t *testing.T) {
	t.Parallel()
	r := run()
	var want bytes.Buffer
	if err := Render(&want, "png", r); err != nil {
		t.Fatal(err)
	}
	got := make([]bytes.Buffer, 4)
	var wg sync.WaitGroup
	for i := range got {
		wg.Go(func() { Render(&got[i], "png", r) })
	}
	wg.Wait()
	for i := range got {
		if !bytes.Equal(got[i].Bytes(), want.Bytes()) {
			t.Errorf("render %d of 4 at once: %d bytes, unlike the lone render's %d", i, got[i].Len(), want.Len())
		}
	}
}
