package telemetry_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/summary"
	"github.com/tokperf/tokperf/internal/telemetry"
	"github.com/tokperf/tokperf/internal/workload"
)

// An exporter's page as dcgm-exporter writes it (written here by hand):
// other counters, a driver-reserved share, a GPU without a reading.
const dcgmPage = `# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"} 1980
DCGM_FI_DEV_SM_CLOCK{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"} 1980
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"} 97
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"} 95
DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"} 1200
DCGM_FI_DEV_FB_FREE{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"} 1300
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"} 79800
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"} 79700
DCGM_FI_DEV_FB_RESERVED{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"} 559
DCGM_FI_DEV_FB_RESERVED{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"} 559
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-aaaa",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"} 612.5
DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-bbbb",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1"} NaN
`

func TestParseDCGM(t *testing.T) {
	t.Parallel()
	got, err := telemetry.ParseDCGM(strings.NewReader(dcgmPage))
	if err != nil {
		t.Fatal(err)
	}
	want := []record.GPUSample{
		{Index: 0, Name: "NVIDIA H100 80GB HBM3", MemUsedMiB: 79800, MemTotalMiB: 79800 + 1200 + 559, UtilPct: 97, PowerW: 612.5},
		{Index: 1, Name: "NVIDIA H100 80GB HBM3", MemUsedMiB: 79700, MemTotalMiB: 79700 + 1300 + 559, UtilPct: 95, PowerW: 0},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("GPU %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, c := range []struct{ name, page, want string }{
		{"no gpu label", `DCGM_FI_DEV_POWER_USAGE{UUID="GPU-a"} 300`, "line 1: DCGM_FI_DEV_POWER_USAGE: gpu label \"\" is not a GPU index"},
		{"unclosed", "# x\n" + `DCGM_FI_DEV_POWER_USAGE{gpu="0} 300`, "line 2: DCGM_FI_DEV_POWER_USAGE: unclosed label value"},
		{"value", `DCGM_FI_DEV_GPU_UTIL{gpu="0"} high`, `line 1: DCGM_FI_DEV_GPU_UTIL: value "high"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := telemetry.ParseDCGM(strings.NewReader(c.page))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}

func FuzzParseDCGM(f *testing.F) {
	f.Add(dcgmPage)
	f.Add(`DCGM_FI_DEV_POWER_USAGE{gpu="0",modelName="a\"b"} 1e3 1700000000`)
	f.Fuzz(func(t *testing.T, page string) {
		gpus, err := telemetry.ParseDCGM(strings.NewReader(page))
		if err != nil {
			return
		}
		for _, g := range gpus {
			if g.Index < 0 || g.PowerW < 0 || math.IsNaN(g.PowerW+g.MemUsedMiB+g.MemTotalMiB+g.UtilPct) {
				t.Fatalf("reading %+v", g)
			}
		}
	})
}

// A remote server's GPUs read from the simulator's DCGM endpoint give the
// energy the simulator knows it drew: Σ power × the stage's window, and
// per token that over the tokens its trace says it sent.
func TestDCGMEnergyAgainstSimulatorTruth(t *testing.T) {
	t.Parallel()
	p, err := sim.ParseProfile("dcgm.yaml", []byte(`name: dcgm
engine: vllm
model: m
gpus: 2
gpu: NVIDIA H200
decode: {linear: {a_ms: 5, c_ms: 0.05}}
prefill: {per_token_us: 10}
`))
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		srv := sim.New(p, sim.Options{})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); srv.Serve(ctx, n) }()
		client := backend.NewClient(8, n.Dial)
		b, _ := backend.New(backend.Config{URL: "http://sim", Endpoint: "completions", Model: "m", Conns: 8, Dial: n.Dial})
		clock := record.NewClock()
		w := telemetry.WatchDCGM(ctx, client, "http://sim/dcgm/metrics", clock, 250*time.Millisecond)
		wl := workload.Synthetic{InputTokens: 16, OutputTokens: 200, IgnoreEOS: true}
		r := &runner.Runner{Backend: b, Source: wl.Request, Clock: clock}
		recs := r.Stage(ctx, runner.Plan{Concurrency: 8, Requests: 32})
		time.Sleep(300 * time.Millisecond)
		w.Stop()
		acc := summary.NewAcc(8, record.SLO{})
		for i := range recs {
			acc.Add(&recs[i])
		}
		st := acc.Stage()
		g := analyze.GPUOf(st, acc, w.Samples())
		if g == nil {
			t.Fatal("no GPU reading from the DCGM endpoint")
		}
		from, to := acc.Window()
		window := (to - from).Seconds()
		truth := (srv.GPUPowerW(0) + srv.GPUPowerW(1)) * window
		if g.GPUs != 2 || g.Names[0] != "NVIDIA H200" {
			t.Errorf("%d GPUs named %v, want 2 × NVIDIA H200", g.GPUs, g.Names)
		}
		if math.Abs(g.EnergyJ/truth-1) > 1e-9 {
			t.Errorf("energy %.3f J, the simulator drew %.3f J (%.0f W over %.3f s)", g.EnergyJ, truth, truth/window, window)
		}
		if len(g.PerGPUW) != 2 || math.Abs(g.PerGPUW[1]-srv.GPUPowerW(1)) > 1e-6 {
			t.Errorf("per GPU %v W, want %v and %v", g.PerGPUW, srv.GPUPowerW(0), srv.GPUPowerW(1))
		}
		tokens := 0
		for _, tr := range srv.Trace() {
			for _, c := range tr.Chunks {
				tokens += c.Tokens
			}
		}
		if tokens != st.OutputTokens {
			t.Fatalf("the client counted %d tokens, the simulator sent %d", st.OutputTokens, tokens)
		}
		if want := 1000 * truth / float64(tokens); math.Abs(g.JPer1000Tokens/want-1) > 1e-9 {
			t.Errorf("%.4f J per 1000 tokens, truth %.4f", g.JPer1000Tokens, want)
		}
		if g.MaxMemMiB <= 2*40000 || g.MaxMemMiB > 2*sim.DCGMFrameBufferMiB {
			t.Errorf("memory ≤ %.0f MiB over 2 GPUs: want the weights and some KV cache, under 2 × %d", g.MaxMemMiB, sim.DCGMFrameBufferMiB)
		}
		b.Close()
		client.CloseIdleConnections()
		cancel()
		<-done
	})
}
