package cli

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/sim"
)

// A stand-in nvidia-smi on PATH reports two GPUs at 100 W and 200 W: the
// run names them in its header, stores their readings, and integrates the
// energy (300 W over the stage's window). The binary runs with the
// stand-in first on its PATH, so the test need not change this process's.
func TestGPUTelemetry(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	script := `#!/bin/sh
case "$*" in *--query-gpu*) ;; *) exit 0 ;; esac
while true; do
  echo "0, Stand-in GPU, 40000, 81559, 50, 100.00"
  echo "1, Stand-in GPU, 41000, 81559, 70, 200.00"
  sleep 0.1
done
`
	if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tokperf := withPath(t, bin)
	p, _ := sim.LoadProfile("tiny")
	_, url, stop, err := sim.Start(t.Context(), p, "127.0.0.1:0", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	path := filepath.Join(t.TempDir(), "g.jsonl")
	out, errw, code := tokperf("run", "--url", url, "-c", "4", "--requests", "16", "--output-tokens", "300", "--gpu-hour-price", "3", "-o", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	m := regexp.MustCompile(`GPUs 2 × Stand-in GPU: memory ≤ 79\.1 GiB, utilization 60%, power (\d+) W, (\d+) J`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no GPU line:\n%s", out)
	}
	if w, _ := strconv.Atoi(m[1]); math.Abs(float64(w)-300) > 15 {
		t.Errorf("power %d W, the stand-in draws 300 W", w)
	}
	h, _, r, err := results.ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	if h.Setup.GPUs != 2 || h.Setup.GPU != "Stand-in GPU" || len(r.GPU()) == 0 {
		t.Errorf("header GPUs %d %q, %d readings stored", h.Setup.GPUs, h.Setup.GPU, len(r.GPU()))
	}
	if !strings.Contains(out, "J per 1000 tokens") {
		t.Errorf("no energy per token:\n%s", out)
	}
	// Each GPU's power is constant, so the energy per token is exactly
	// 300 W × the stage's wall time / its tokens, and the cost the two
	// GPUs' time at $3 an hour over the same tokens.
	js, errw, code := runCLI(t, "report", path, "--format", "json")
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errw)
	}
	s := readCostRun(t, js, errw).Stages[0]
	j, usd := 1000*300*s.WallS/float64(s.OutputTokens), 2*3*s.WallS/3600/float64(s.OutputTokens)*1e6
	if s.GPU == nil || s.Cost == nil || math.Abs(s.GPU.JPer1000Tokens/j-1) > 1e-6 || math.Abs(s.Cost.USDPerMTok/usd-1) > 1e-9 {
		t.Errorf("energy %+v, cost %+v; want %.4f J per 1000 tokens, $%.6f per Mtok", s.GPU, s.Cost, j, usd)
	}
}

// A soak's slices carry the GPUs' readings of their own window: the most
// memory in use on both together, and the power of both.
func TestGPUPerSlice(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("six seconds of real time")
	}
	bin := t.TempDir()
	script := `#!/bin/sh
case "$*" in *--query-gpu*) ;; *) exit 0 ;; esac
while true; do
  echo "0, Stand-in GPU, 40000, 81559, 50, 100.00"
  echo "1, Stand-in GPU, 41000, 81559, 70, 200.00"
  sleep 0.1
done
`
	if err := os.WriteFile(filepath.Join(bin, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tokperf := withPath(t, bin)
	p, _ := sim.LoadProfile("tiny")
	_, url, stop, err := sim.Start(t.Context(), p, "127.0.0.1:0", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	out, errw, code := tokperf("soak", "--url", url, "-c", "2", "--slice", "1s", "--duration", "6s", "--output-tokens", "50", "-o", path)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	_, _, r, err := results.ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	sl := r.Slices()
	if len(sl) < 6 {
		t.Fatalf("%d slices", len(sl))
	}
	for _, s := range sl[:6] {
		if s.GPUMemMiB != 81000 || math.Abs(s.GPUPowerW-300) > 15 {
			t.Errorf("slice %d: GPU memory %v MiB, power %v W; want 81000 (both) and 300", s.Index, s.GPUMemMiB, s.GPUPowerW)
		}
	}
}

// withPath runs the tokperf binary with dir first on its PATH, and returns
// its stdout, stderr and exit code.
func withPath(t *testing.T, dir string) func(args ...string) (string, string, int) {
	exe := buildBinary(t)
	return func(args ...string) (string, string, int) {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		var out, errw strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errw
		err := cmd.Run()
		code := cmd.ProcessState.ExitCode()
		if err != nil && code < 0 {
			t.Fatalf("tokperf %s: %v", strings.Join(args, " "), err)
		}
		return out.String(), errw.String(), code
	}
}
