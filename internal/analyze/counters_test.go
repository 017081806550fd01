package analyze

import (
	"math"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
)

func TestSummarizeCounters(t *testing.T) {
	t.Parallel()
	n := engine.Metrics{Running: "r", Waiting: "w", Generated: "g", SpecDrafts: "d", SpecDraftTokens: "dt", SpecAccepted: "a"}
	s := SummarizeCounters([]record.ServerSample{
		{At: 0, Values: map[string]float64{n.Running: 3, n.Generated: 100, n.SpecDrafts: 10, n.SpecDraftTokens: 30, n.SpecAccepted: 15}},
		{At: 1e9, Values: map[string]float64{n.Running: 8, n.Waiting: 2, n.Generated: 600, n.SpecDrafts: 110, n.SpecDraftTokens: 330, n.SpecAccepted: 165}},
		{At: 2e9, Values: map[string]float64{n.Running: 5, n.Generated: 1100, n.SpecDrafts: 210, n.SpecDraftTokens: 630, n.SpecAccepted: 315}},
		{At: 9e9, Values: map[string]float64{n.Running: 99, n.Generated: 1e6}}, // outside the window
	}, n, 0, 2e9)
	if s.MaxRunning != 8 || s.MaxWaiting != 2 || s.GenTokS != 500 || s.SpecLength != 2.5 || math.Abs(s.SpecRate-0.5) > 1e-12 || !math.IsNaN(s.CacheHit) {
		t.Errorf("%+v", s)
	}
}

func TestGPUEnergy(t *testing.T) {
	t.Parallel()
	var samples []record.GPUSample
	// Two GPUs every 250 ms for 4 s: one at a constant 100 W, one ramping
	// from 100 W to 300 W.
	for i := 0; i <= 16; i++ {
		at := time.Duration(i) * 250 * time.Millisecond
		samples = append(samples,
			record.GPUSample{At: at, Index: 0, Name: "H100", MemUsedMiB: 1000, PowerW: 100, UtilPct: 50},
			record.GPUSample{At: at, Index: 1, Name: "H100", MemUsedMiB: 2000, PowerW: 100 + 50*at.Seconds(), UtilPct: 70})
	}
	// Window 1 s to 3 s: 100 W × 2 s + the mean of 150..250 W × 2 s = 200 + 400 J.
	g := SummarizeGPUs(samples, time.Second, 3*time.Second)
	if g.GPUs != 2 || math.Abs(g.EnergyJ-600) > 1e-6 || math.Abs(g.PowerW-300) > 1e-6 || g.MaxMemMiB != 3000 || g.UtilPct != 60 {
		t.Errorf("%+v", g)
	}
	// A window edge between two samples is cut on the line between them.
	if g := SummarizeGPUs(samples, 1100*time.Millisecond, 1200*time.Millisecond); math.Abs(g.PerGPUJ[0]-10) > 1e-6 {
		t.Errorf("100 W for 0.1 s: %v J", g.PerGPUJ[0])
	}
	// Samples that begin after the window does and end before it: the
	// edges are held at the nearest reading, not counted as 0 W.
	late := []record.GPUSample{{At: 1500 * time.Millisecond, Index: 0, Name: "H100", PowerW: 100}, {At: 2500 * time.Millisecond, Index: 0, Name: "H100", PowerW: 300}}
	if g := SummarizeGPUs(late, time.Second, 3*time.Second); math.Abs(g.EnergyJ-(50+200+150)) > 1e-6 || math.Abs(g.PowerW-200) > 1e-6 {
		t.Errorf("edges held: %v J, %v W; want 400 J, 200 W", g.EnergyJ, g.PowerW)
	}
}

// Two readings of one GPU that round to the same moment (a reader that
// fell behind) count once in the memory in use on all GPUs together.
func TestGPUMemoryCountsEachGPUOnce(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	samples := []record.GPUSample{
		{At: 1000 * ms, Index: 0, MemUsedMiB: 40000, PowerW: 100}, {At: 1001 * ms, Index: 1, MemUsedMiB: 41000, PowerW: 200},
		{At: 1020 * ms, Index: 0, MemUsedMiB: 40000, PowerW: 100}, {At: 1021 * ms, Index: 1, MemUsedMiB: 41000, PowerW: 200},
	}
	if g := SummarizeGPUs(samples, 0, 2000*ms); g.MaxMemMiB != 81000 {
		t.Errorf("memory %v MiB, want 81000", g.MaxMemMiB)
	}
}
