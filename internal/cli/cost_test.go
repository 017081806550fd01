package cli

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/sim"
)

// costRun is the part of a run's JSON the energy, cost and bound tests read.
type costRun struct {
	Stages []struct {
		WallS         float64 `json:"wall_s"`
		OutputTokens  int     `json:"output_tokens"`
		AggregateTokS float64 `json:"aggregate_tok_s"`
		Effective     float64 `json:"effective_concurrency"`
		GPU           *struct {
			JPer1000Tokens float64 `json:"j_per_1000_tokens"`
		} `json:"gpu"`
		Cost *struct {
			GPUs       int     `json:"gpus"`
			USDPerMTok float64 `json:"usd_per_mtok"`
		} `json:"cost"`
		Bound *struct {
			DecodeTokS float64  `json:"decode_tok_s_per_gpu"`
			Over       []string `json:"impossible"`
		} `json:"bound"`
	} `json:"stages"`
	Warnings []analyze.Warning `json:"warnings"`
}

func readCostRun(t *testing.T, out, errw string) costRun {
	t.Helper()
	var r costRun
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Stages) != 1 {
		t.Fatalf("%v: want one stage in\n%s\n%s", err, out, errw)
	}
	return r
}

// A run that read its GPUs' power (the simulator's DCGM exporter, whose
// power is known) and was given a GPU-hour price has J per 1000 tokens
// equal to power × wall time / tokens, and $/Mtok equal to GPUs × price ×
// wall time / tokens, and both are in every format of its report.
func TestEnergyAndCostInEveryFormat(t *testing.T) {
	t.Parallel()
	p, _ := sim.LoadProfile("tiny")
	srv, url, stop, err := sim.Start(t.Context(), p, "127.0.0.1:0", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	path := filepath.Join(t.TempDir(), "e.jsonl")
	out, errw, code := runCLI(t, "run", "--url", url, "--gpu-metrics", "/dcgm/metrics", "--gpu-hour-price", "2.5", "-c", "4", "--requests", "16", "--output-tokens", "100", "-o", path, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	s := readCostRun(t, out, errw).Stages[0]
	if s.GPU == nil || s.Cost == nil {
		t.Fatalf("no energy or cost in\n%s", out)
	}
	watts := 0.0
	for i := range max(p.GPUs, 1) {
		watts += srv.GPUPowerW(i)
	}
	tokens := float64(s.OutputTokens)
	j := 1000 * watts * s.WallS / tokens
	usd := float64(max(p.GPUs, 1)) * 2.5 * s.WallS / 3600 / tokens * 1e6
	if math.Abs(s.GPU.JPer1000Tokens/j-1) > 1e-6 || math.Abs(s.Cost.USDPerMTok/usd-1) > 1e-9 || s.Cost.GPUs != max(p.GPUs, 1) {
		t.Errorf("%.4f J per 1000 tokens, $%.6f per Mtok on %d GPUs; power × time gives %.4f J, the GPUs' time $%.6f", s.GPU.JPer1000Tokens, s.Cost.USDPerMTok, s.Cost.GPUs, j, usd)
	}
	want := map[string][]string{
		"text":     {fmt.Sprintf("%.1f J per 1000 tokens", j), fmt.Sprintf("cost $%.4g per million output tokens", usd)},
		"html":     {fmt.Sprintf("%.1f J per 1000 tokens", j), fmt.Sprintf("cost $%.4g per million output tokens", usd)},
		"markdown": {fmt.Sprintf("| %.2f | %.4f |", j, usd), fmt.Sprintf("cost $%.4g per million output tokens", usd)},
	}
	for format, parts := range want {
		got, errw, code := runCLI(t, "report", path, "--format", format)
		for _, w := range parts {
			if code != 0 || !strings.Contains(got, w) {
				t.Errorf("%s: exit %d, no %q in\n%s\n%s", format, code, w, got, errw)
			}
		}
	}
	got, _, _ := runCLI(t, "report", path, "--format", "csv")
	var rows [][]string
	rows, err = csv.NewReader(strings.NewReader(got)).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("csv: %v\n%s", err, got)
	}
	for i, key := range rows[0] {
		v, _ := strconv.ParseFloat(rows[1][i], 64)
		if (key == "j_per_1000_tokens" && math.Abs(v/j-1) > 1e-6) || (key == "usd_per_mtok" && math.Abs(v/usd-1) > 1e-9) {
			t.Errorf("csv %s %v; want %.6f J, $%.6f", key, v, j, usd)
		}
	}
	if !strings.Contains(rows[0][len(rows[0])-2]+rows[0][len(rows[0])-1], "j_per_1000_tokensusd_per_mtok") {
		t.Errorf("csv columns %v lack the energy and the cost", rows[0])
	}
}

// compare sets the energy and cost of runs side by side only when their
// batch, lengths, GPU count and precision match: another output length or
// GPU count refuses the ratio and says why, in the text and the JSON.
func TestCompareRefusesUnfairEnergy(t *testing.T) {
	t.Parallel()
	p, _ := sim.LoadProfile("tiny")
	_, url, stop, err := sim.Start(t.Context(), p, "127.0.0.1:0", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := t.TempDir()
	base := []string{"run", "--url", url, "--gpu-metrics", "/dcgm/metrics", "--gpu-hour-price", "2", "--model-params", "0.5B", "--precision", "bf16", "-c", "4", "--requests", "24"}
	runs := map[string][]string{"a": {"--output-tokens", "100"}, "same": {"--output-tokens", "100"}, "longer": {"--output-tokens", "400"}, "gpus": {"--output-tokens", "100", "--gpus", "2"}}
	for _, name := range []string{"a", "same", "longer", "gpus"} {
		args := append(append(append([]string{}, base...), runs[name]...), "-o", filepath.Join(dir, name+".jsonl"))
		if out, errw, code := runCLI(t, args...); code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", name, code, out, errw)
		}
	}
	files := []string{filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "same.jsonl"), filepath.Join(dir, "longer.jsonl"), filepath.Join(dir, "gpus.jsonl")}
	out, errw, code := runCLI(t, append([]string{"compare", "--format", "json"}, files...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	var c struct {
		Energy []analyze.EnergyFigure `json:"energy"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil || len(c.Energy) != 6 {
		t.Fatalf("%v: want J and $ of three Bs:\n%s", err, out)
	}
	for _, f := range c.Energy {
		want := map[string]string{"same": "comparable", "longer": "refused: different output length (100 vs 400 tokens)", "gpus": "refused: different GPU count (1 vs 2)"}[strings.TrimSuffix(filepath.Base(f.B), ".jsonl")]
		if f.Verdict != want || (want == "comparable") != (f.Ratio > 0) {
			t.Errorf("%s %s: %q, ratio %v; want %q", f.B, f.Name, f.Verdict, f.Ratio, want)
		}
	}
	text, _, _ := runCLI(t, append([]string{"compare"}, files...)...)
	if !strings.Contains(text, "no ratio: refused: different output length") || !strings.Contains(text, "USD per Mtok") {
		t.Errorf("the text does not refuse the unfair ratio:\n%s", text)
	}
}

// hwCase is one generated deployment: stated hardware, and a decode step
// whose time is a chosen multiple of the least time that hardware needs
// to read the weights once (the roofline's floor).
type hwCase struct {
	gpu       string
	gpus      int
	paramsB   float64
	precision string
	floorMs   float64 // weights / (GPUs × bandwidth)
	factor    float64 // the step's time over the floor: < 1 is impossible
}

func (c hwCase) profile(seed int) string {
	bytes, _ := analyze.PrecisionBytes(c.precision)
	spec, _ := analyze.LookupGPU(c.gpu)
	// Prefill well within the compute bound: twice the least time.
	prefillUs := 2 * 2 * c.paramsB * 1e9 / (float64(c.gpus) * spec.TFLOPS(bytes) * 1e12) * 1e6
	return fmt.Sprintf(`name: gen-%d
engine: vllm
model: gen-model
gpus: %d
gpu: %s
hardware: {gpu: %s, gpus: %d, params_b: %g, precision: %s}
decode:
  linear: {a_ms: %g, c_ms: 0}
prefill:
  per_token_us: %g
seed: %d
`, seed, c.gpus, c.gpu, c.gpu, c.gpus, c.paramsB, c.precision, c.factor*c.floorMs, prefillUs, seed)
}

// A simulator profile whose stated hardware cannot read its weights as
// fast as its steps claim is flagged impossible; one whose steps take
// longer than that floor is not. Over a generated family of GPUs, GPU
// counts, model sizes and precisions, each step's time set by
// construction at 0.25-0.6× the floor (impossible) or 1.3-3× (possible).
func TestImpossibleProfileIsFlagged(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(41, 1))
	gpus := []string{"H100 SXM", "H200", "A100 SXM", "L40S", "MI300X", "B200"}
	for i := range 10 {
		c := hwCase{gpu: gpus[r.IntN(len(gpus))], gpus: 1 + r.IntN(4), paramsB: 1 + 30*r.Float64(), precision: []string{"bf16", "fp8"}[r.IntN(2)]}
		spec, _ := analyze.LookupGPU(c.gpu)
		bytes, _ := analyze.PrecisionBytes(c.precision)
		c.floorMs = c.paramsB * 1e9 * bytes / (float64(c.gpus) * spec.TBs * 1e12) * 1e3
		impossible := i%2 == 0
		if impossible {
			c.factor = 0.25 + 0.35*r.Float64()
		} else {
			c.factor = 1.3 + 1.7*r.Float64()
		}
		t.Run(fmt.Sprintf("%d×%s-%.0fB-%s-%.2f", c.gpus, c.gpu, c.paramsB, c.precision, c.factor), func(t *testing.T) {
			t.Parallel()
			file := filepath.Join(t.TempDir(), "p.yaml")
			if err := os.WriteFile(file, []byte(c.profile(i)), 0o644); err != nil {
				t.Fatal(err)
			}
			out, errw, code := runVirtual(t, "run", "--sim-profile", file, "-c", "8", "--requests", "16", "--output-tokens", "64", "--format", "json", "-o", filepath.Join(t.TempDir(), "r.jsonl"))
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errw)
			}
			run := readCostRun(t, out, errw)
			s := run.Stages[0]
			if s.Bound == nil {
				t.Fatalf("no bound:\n%s", out)
			}
			// The bound: the batch (mean in flight) of tokens per floor, per GPU.
			if want := max(1, s.Effective) / c.floorMs * 1e3 / float64(c.gpus); math.Abs(s.Bound.DecodeTokS/want-1) > 1e-6 {
				t.Errorf("bound %.2f tok/s per GPU, the floor gives %.2f", s.Bound.DecodeTokS, want)
			}
			t.Logf("measured %.1f tok/s per GPU, bound %.1f (%.2f×)", s.AggregateTokS/float64(c.gpus), s.Bound.DecodeTokS, s.AggregateTokS/float64(c.gpus)/s.Bound.DecodeTokS)
			flagged := false
			for _, w := range run.Warnings {
				flagged = flagged || w.Check == "impossible"
			}
			if flagged != impossible || (len(s.Bound.Over) > 0) != impossible {
				t.Errorf("measured %.1f tok/s per GPU against a bound of %.1f: flagged %v, over %q; impossible by construction: %v",
					s.AggregateTokS/float64(c.gpus), s.Bound.DecodeTokS, flagged, s.Bound.Over, impossible)
			}
		})
	}
}

// Bad hardware or price flags are refused before anything is sent,
// naming the flag and what it wants; a count reads 70B, 1.5T or 500M.
func TestHardwareFlagsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--model-params", "seventy"}, "--model-params \"seventy\": want a parameter count"},
		{[]string{"--model-params", "-3B", "--precision", "bf16"}, "--model-params \"-3B\""},
		{[]string{"--model-params", "70B"}, "--precision \"\": want bf16"},
		{[]string{"--model-params", "70B", "--precision", "q4_k_m"}, "--precision \"q4_k_m\""},
		{[]string{"--model-params", "17B", "--active-params", "70B", "--precision", "fp8"}, "--active-params 70B is more than --model-params 17B"},
		{[]string{"--precision", "fp8"}, "--active-params and --precision need --model-params"},
		{[]string{"--gpu-hour-price", "-1"}, "--gpu-hour-price -1"},
		{[]string{"--kv-bytes", "-1"}, "--kv-bytes -1"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			_, errw, code := runCLI(t, append([]string{"run", "--requests", "1"}, tc.args...)...)
			if code != 2 || !strings.Contains(errw, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errw, tc.want)
			}
		})
	}
	for s, want := range map[string]float64{"70B": 70, "397b": 397, "1.5T": 1500, "500M": 0.5, "8.03": 8.03} {
		if got, err := billions("--model-params", s); err != nil || math.Abs(got-want) > 1e-12 {
			t.Errorf("%s: %v %v, want %v billions", s, got, err, want)
		}
	}
}

// Against llama-server, the model's size is read from its /v1/models
// (meta.n_params and meta.size, here the simulator's llama.cpp stating a
// 70B model in 4-bit weights): with only --gpu-type and --gpus given, the
// bound rests on it, says so, and flags steps a fifth of what an H100
// needs to read those weights.
func TestBoundFromTheServersModelSize(t *testing.T) {
	t.Parallel()
	const floorMs = 70e9 * 0.5 / 3.35e12 * 1e3 // 35 GB over one H100's 3.35 TB/s
	p, err := sim.ParseProfile("p.yaml", []byte(fmt.Sprintf("name: llama70\nengine: llamacpp\nhardware: {params_b: 70, precision: q4_0}\ndecode:\n  linear: {a_ms: %g, c_ms: 0}\nprefill:\n  per_token_us: 1\n", 0.2*floorMs)))
	if err != nil {
		t.Fatal(err)
	}
	_, url, stop, err := sim.Start(t.Context(), p, "127.0.0.1:0", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	out, errw, code := runCLI(t, "run", "--url", url, "--gpu-type", "H100", "--gpus", "1", "-c", "4", "--requests", "8", "--output-tokens", "32", "--format", "json", "-o", filepath.Join(t.TempDir(), "r.jsonl"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	var run struct {
		Setup struct {
			Hardware struct {
				ParamsB       float64 `json:"params_b"`
				BytesPerParam float64 `json:"bytes_per_param"`
				From          string  `json:"from"`
			} `json:"hardware"`
		} `json:"setup"`
	}
	json.Unmarshal([]byte(out), &run)
	if h := run.Setup.Hardware; h.ParamsB != 70 || h.BytesPerParam != 0.5 || h.From != "the server's /v1/models meta" {
		t.Errorf("setup.hardware %+v; want 70B of 0.5 bytes from the server", h)
	}
	r := readCostRun(t, out, errw)
	if s := r.Stages[0]; s.Bound == nil || len(s.Bound.Over) == 0 {
		t.Fatalf("not flagged:\n%s", out)
	}
	var text string
	for _, w := range r.Warnings {
		if w.Check == "impossible" {
			text = w.Text
		}
	}
	if !strings.Contains(text, "the model's size from the server's /v1/models meta") {
		t.Errorf("the warning does not say where the size came from: %q", text)
	}
}
