package cli

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/sim"
)

// --gpu-metrics reads a remote server's GPUs from its DCGM exporter (here
// the simulator's, on the target): the header names them and where they
// were read, and the stage's energy is the simulator's known power over
// the stage's window, per token over the tokens received.
func TestGPUMetricsFromDCGM(t *testing.T) {
	t.Parallel()
	p, _ := sim.LoadProfile("tiny")
	srv, url, stop, err := sim.Start(t.Context(), p, "127.0.0.1:0", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	path := filepath.Join(t.TempDir(), "d.jsonl")
	out, errw, code := runCLI(t, "run", "--url", url, "--gpu-metrics", "/dcgm/metrics", "-c", "4", "--requests", "16", "--output-tokens", "300", "-o", path, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	var run struct {
		Stages []struct {
			WallS        float64 `json:"wall_s"`
			OutputTokens int     `json:"output_tokens"`
			GPU          *struct {
				GPUs           int     `json:"gpus"`
				EnergyJ        float64 `json:"energy_j"`
				JPer1000Tokens float64 `json:"j_per_1000_tokens"`
			} `json:"gpu"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(out), &run); err != nil || len(run.Stages) != 1 || run.Stages[0].GPU == nil {
		t.Fatalf("%v: no GPU reading in\n%s\n%s", err, out, errw)
	}
	s := run.Stages[0]
	watts := 0.0
	for i := range max(p.GPUs, 1) {
		watts += srv.GPUPowerW(i)
	}
	// The JSON keeps the figures to the bit; the window is the stage's wall.
	if truth := watts * s.WallS; math.Abs(s.GPU.EnergyJ/truth-1) > 1e-6 {
		t.Errorf("energy %.3f J, the simulator drew %.0f W × %.3f s = %.3f J", s.GPU.EnergyJ, watts, s.WallS, truth)
	}
	if truth := 1000 * watts * s.WallS / float64(s.OutputTokens); math.Abs(s.GPU.JPer1000Tokens/truth-1) > 1e-6 {
		t.Errorf("%.3f J per 1000 tokens, truth %.3f", s.GPU.JPer1000Tokens, truth)
	}
	h, _, r, err := results.ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	if h.Setup.GPUMetrics != url+"/dcgm/metrics" || h.Setup.GPUs != max(p.GPUs, 1) || len(r.GPU()) == 0 {
		t.Errorf("header gpu_metrics %q, %d GPUs, %d readings", h.Setup.GPUMetrics, h.Setup.GPUs, len(r.GPU()))
	}
	if !strings.Contains(errw, "GPU readings from the DCGM exporter") {
		t.Errorf("stderr does not say where the GPU readings come from:\n%s", errw)
	}
	// An endpoint that is no exporter stops the run before it starts.
	_, errw, code = runCLI(t, "run", "--url", url, "--gpu-metrics", "/health", "-c", "1", "--requests", "1")
	if code == 0 || !strings.Contains(errw, "not a DCGM exporter's metrics") {
		t.Errorf("exit %d for a non-exporter:\n%s", code, errw)
	}
	if _, errw, code = runCLI(t, "run", "--gpu-metrics", "gpu-host:9400", "-c", "1"); code != 2 || !strings.Contains(errw, "--gpu-metrics") {
		t.Errorf("exit %d for a bad URL: %s", code, errw)
	}
}
