package twin_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/twin"
	"github.com/tokperf/tokperf/internal/workload"
)

// The fit says whether the step curve's shape past its last batch is
// pinned: not with fewer than three batch sizes, nor when the slopes
// between the last three are equal within their errors; yes when the
// curve measurably bends.
func TestTwinSaysWhetherTheShapeIsPinned(t *testing.T) {
	t.Parallel()
	skipUnderRace(t)
	straight := filepath.Join(t.TempDir(), "straight.yaml")
	if err := os.WriteFile(straight, []byte("name: straight\nengine: vllm\ndecode: {linear: {a_ms: 5, c_ms: 0.1}}\nprefill: {per_token_us: 20}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w := workload.Synthetic{InputTokens: 128, OutputTokens: 64, IgnoreEOS: true, Seed: 1}
	for _, tc := range []struct {
		name, profile string
		levels        []int
		pinned        bool
		says          string
	}{
		{"two batch sizes", "seed", []int{1, 16}, false, "2 batch sizes measured, fewer than the 3 a curve needs"},
		{"a straight line", straight, []int{1, 4, 16}, false, "no curvature was measured"},
		{"a bend upward", "seed", []int{4, 16, 32}, true, "bending up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := twin.Fit(input(t, sweep(t, tc.profile, w, tc.levels)))
			if err != nil {
				t.Fatal(err)
			}
			s := f.Model().Shape
			if s == nil || s.Pinned != tc.pinned || !strings.Contains(s.Text, tc.says) {
				t.Fatalf("shape %+v, want pinned %v saying %q", s, tc.pinned, tc.says)
			}
			if !strings.Contains(strings.Join(f.Model().Notes, "\n"), s.Text) {
				t.Errorf("the notes do not say it: %q", f.Model().Notes)
			}
		})
	}
}

// The envelope is only past the fitted levels, and widens with the
// distance from the last: a level inside the run gets the fit's interval
// alone, and each doubling past it a wider one.
func TestEnvelopeWidensWithDistance(t *testing.T) {
	t.Parallel()
	skipUnderRace(t)
	w := workload.Synthetic{InputTokens: 128, OutputTokens: 64, IgnoreEOS: true, Seed: 1}
	f, err := twin.Fit(input(t, sweep(t, "llama-3.1-8b-h100", w, []int{1, 4, 16})))
	if err != nil {
		t.Fatal(err)
	}
	pred := f.Predict([]int{8, 32, 64, 128}, twin.Options{})
	width := func(i int) float64 {
		e, _ := pred[i].Figure("aggregate tok/s")
		return math.Log(e.Hi / e.Lo)
	}
	inside, _ := pred[0].Figure("aggregate tok/s")
	if len(pred[0].Figures[0].Growths) != 0 || width(0) > 0.2 {
		t.Errorf("C=8, inside the run: interval %+v with growths %v, want the fit's alone", inside, pred[0].Figures[0].Growths)
	}
	for i := 1; i < len(pred); i++ {
		if n := len(pred[i].Figures[0].Growths); n != len(f.Model().Shape.Growths) {
			t.Errorf("C=%d: %d growths predicted, the shape has %d", pred[i].Concurrency, n, len(f.Model().Shape.Growths))
		}
		if !(width(i) > width(i-1)) {
			t.Errorf("C=%d: interval %.3f wide (log), C=%d's %.3f: want wider further out", pred[i].Concurrency, width(i), pred[i-1].Concurrency, width(i-1))
		}
	}
}

// A power law through three steps is recovered, and the profile with its
// points still loads in the simulator.
func TestPowerLawThroughThreeSteps(t *testing.T) {
	t.Parallel()
	for _, p := range []float64{0.5, 1, 1.7} {
		curve := func(b float64) float64 { return 3 + 0.2*math.Pow(b, p) }
		pts := []sim.StepPoint{{Batch: 2, StepMs: curve(2)}, {Batch: 8, StepMs: curve(8)}, {Batch: 16, StepMs: curve(16)}}
		base, k, got, ok := twin.PowerThrough(pts[0], pts[1], pts[2])
		if !ok || math.Abs(got-p) > 1e-6 || math.Abs(base-3) > 1e-6 || math.Abs(k-0.2) > 1e-6 {
			t.Errorf("p=%g: fitted %g + %g·B^%g (ok %v)", p, base, k, got, ok)
		}
		ext := twin.ExtendBy(pts, 100, curve)
		for i := 1; i < len(ext); i++ {
			if ext[i].Batch <= ext[i-1].Batch {
				t.Fatalf("p=%g: batches not increasing: %v", p, ext)
			}
		}
		if last := ext[len(ext)-1].Batch; last < 100 {
			t.Errorf("p=%g: extended to batch %d, want 100", p, last)
		}
	}
	if _, _, _, ok := twin.PowerThrough(sim.StepPoint{Batch: 1, StepMs: 5}, sim.StepPoint{Batch: 4, StepMs: 5}, sim.StepPoint{Batch: 16, StepMs: 6}); ok {
		t.Error("a flat pair of steps has no power law through it")
	}
}
