package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

func foreignFile(name string) string { return filepath.Join("..", "foreign", "testdata", name) }

// report reads other tools' files by content and names their definitions;
// the JSON has the source and null for a percentile the file lacks.
func TestReportForeignFiles(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ file, want string }{
		{"vllm-serve.json", "ICL is vLLM's itl"},
		{"sglang-bench.jsonl", "SGLang's file counts no failed requests"},
		{"guidellm-benchmarks.json", "GuideLLM's time_per_output_token_ms includes the first token"},
		{"aiperf-profile_export_aiperf.json", "TPOT is AIPerf's inter_token_latency"},
		{"aiperf-profile_export.jsonl", "computed by tokperf from AIPerf's per-request values"},
		{"inference-perf-stage.json", "TPOT is inference-perf's time_per_output_token"},
	} {
		t.Run(c.file, func(t *testing.T) {
			out, errw, code := runCLI(t, "report", foreignFile(c.file))
			if code != 0 || !strings.Contains(out, c.want) || !strings.Contains(out, "not by tokperf") {
				t.Fatalf("exit %d, stderr %q, stdout:\n%s", code, errw, out)
			}
		})
	}
	out, _, code := runCLI(t, "report", foreignFile("vllm-serve.json"), "--format", "json")
	var run struct {
		Source struct{ Tool string } `json:"source"`
		Stages []struct {
			TTFT struct{ P90 *float64 } `json:"ttft_ms"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(out), &run); code != 0 || err != nil {
		t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	if run.Source.Tool != "vllm" || len(run.Stages) != 1 || run.Stages[0].TTFT.P90 != nil {
		t.Errorf("source %q, stages %+v: want vllm, TTFT p90 null", run.Source.Tool, run.Stages)
	}
}

// compare sets another tool's file against a tokperf run at the shared
// level; with no per-request samples nothing is called significant, and
// the ratio is shown untested.
func TestCompareForeign(t *testing.T) {
	t.Parallel()
	mine := filepath.Join(t.TempDir(), "mine.jsonl")
	setup := seedSetup()
	setup.Load.Concurrency = []int{4}
	writeRun(t, mine, setup, map[int]float64{4: 2048})
	out, errw, code := runCLI(t, "compare", foreignFile("sglang-bench.jsonl"), mine)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	for _, want := range []string{"| 4 | aggregate tok/s | 1024.0 | 2048.0 | 2.00× (not tested) |", "context only", "its ratios are shown untested, none is called significant"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// The text and CSV reports of every foreign fixture are pinned byte for
// byte (go test -update rewrites them): definitions, blanks, setup lines.
func TestReportForeignGolden(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"vllm-serve.json", "vllm-append.json", "vllm-detailed.json", "vllm-default.json", "sglang-bench.jsonl", "guidellm-benchmarks.json", "aiperf-profile_export_aiperf.json", "aiperf-profile_export.jsonl", "inference-perf-stage.json"} {
		for _, format := range []string{"text", "csv", "markdown"} {
			out, errw, code := runCLI(t, "report", foreignFile(name), "--format", format)
			if code != 0 {
				t.Fatalf("%s %s: exit %d: %s", name, format, code, errw)
			}
			golden(t, "foreign-"+strings.TrimSuffix(name, filepath.Ext(name))+"."+format, out)
		}
	}
}

// report --gpus gives a file that states no GPU count one, for its per-GPU
// figures and charts; a count the file states stands.
func TestReportGPUs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file string
		want int
	}{{"vllm-serve.json", 4}, {"sglang-bench.jsonl", 2}} {
		out, errw, code := runCLI(t, "report", foreignFile(c.file), "--gpus", "4", "--format", "json")
		var run struct {
			Setup struct {
				GPUs int `json:"gpus"`
			} `json:"setup"`
		}
		if err := json.Unmarshal([]byte(out), &run); code != 0 || err != nil {
			t.Fatalf("exit %d, %v, stderr %q", code, err, errw)
		}
		if run.Setup.GPUs != c.want {
			t.Errorf("%s --gpus 4: setup.gpus %d, want %d", c.file, run.Setup.GPUs, c.want)
		}
	}
	if _, errw, code := runCLI(t, "report", foreignFile("vllm-serve.json"), "--gpus", "-1"); code != 2 || !strings.Contains(errw, "--gpus") {
		t.Errorf("--gpus -1: exit %d, stderr %q", code, errw)
	}
}
