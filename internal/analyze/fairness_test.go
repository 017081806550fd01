package analyze

import (
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
)

func fieldsByName(fields []Field) map[string]Field {
	out := map[string]Field{}
	for _, f := range fields {
		out[f.Name] = f
	}
	return out
}

// A llama.cpp run on a CPU knows its GPU type and count (none): against a
// GPU run the device is the difference named first, and two CPU runs are
// the same there, not "unknown" (issue 37).
func TestFairnessCPUAgainstGPU(t *testing.T) {
	t.Parallel()
	cpu := record.Setup{Model: "qwen2.5-0.5b-instruct-q4_k_m.gguf", Server: record.Server{Engine: "llamacpp"}, Endpoint: "completions", GPU: "cpu",
		Workload: record.Workload{InputTokens: 128, OutputTokens: 64}, Load: record.Load{Concurrency: []int{1, 4}}}
	gpu := cpu
	gpu.GPU, gpu.GPUs = "NVIDIA H200", 1
	fields, verdict := Fairness(RunSide("A", cpu, 0, ""), RunSide("B", gpu, 0, ""))
	got := fieldsByName(fields)
	if d := got["device"]; d.A != "CPU" || d.B != "GPU" || d.Verdict != "different" {
		t.Errorf("device: %+v", d)
	}
	// (llama.cpp states no speculative decoding: that stays unknown.)
	if !strings.HasPrefix(verdict, "context only (different: device, GPU type, GPU count;") || strings.Contains(verdict, "unknown: GPU") {
		t.Errorf("verdict %q; want the device named first, the GPU rows known", verdict)
	}
	_, verdict = Fairness(RunSide("A", cpu, 0, ""), RunSide("B", cpu, 0, ""))
	if strings.Contains(verdict, "GPU") || strings.Contains(verdict, "device") || strings.Contains(verdict, "different") {
		t.Errorf("two CPU runs: %q", verdict)
	}
}

// compare of a fixed 256 against a dataset's own lengths: not "same", and
// a prompts row says where each run's prompts came from (issue 37).
func TestFairnessDatasetLengthsAndPrompts(t *testing.T) {
	t.Parallel()
	fixed := record.Setup{Model: "m", Server: record.Server{Engine: "vllm"}, Endpoint: "completions",
		Workload: record.Workload{InputTokens: 128, OutputTokens: 256}, Load: record.Load{Concurrency: []int{8}}}
	data := fixed
	data.Workload.Input, data.Workload.Output, data.Workload.Prompts = "dataset", "dataset", "dataset sharegpt.json (sharegpt): 200 requests"
	got := fieldsByName(func() []Field { f, _ := Fairness(RunSide("A", fixed, 0, ""), RunSide("B", data, 0, "")); return f }())
	if o := got["output tokens"]; o.A != "256" || o.B != "dataset" || o.Verdict != "different" {
		t.Errorf("output tokens: %+v", o)
	}
	if p := got["prompts"]; p.A != "the fixed word list" || p.Verdict != "different" {
		t.Errorf("prompts: %+v", p)
	}
}
