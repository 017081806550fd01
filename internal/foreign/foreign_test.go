package foreign

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
)

func read(t *testing.T, name string) *analyze.Run {
	t.Helper()
	run, err := Read(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if run.Source == nil {
		t.Fatal("a foreign run has no Source")
	}
	// Every run renders as JSON: the blanks are nulls, never NaN.
	if _, err := json.Marshal(run); err != nil {
		t.Fatalf("JSON of the run: %v", err)
	}
	return run
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.IsNaN(want) != math.IsNaN(got) || !math.IsNaN(want) && math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func nearDist(t *testing.T, what string, d stats.Dist, n int, mean, p50, p90, p99, max float64) {
	t.Helper()
	if d.N != n {
		t.Errorf("%s: n = %d, want %d", what, d.N, n)
	}
	near(t, what+" mean", d.Mean, mean)
	near(t, what+" p50", d.P50, p50)
	near(t, what+" p90", d.P90, p90)
	near(t, what+" p99", d.P99, p99)
	near(t, what+" max", d.Max, max)
}

func blank(t *testing.T, run *analyze.Run, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if run.Source.Has(k) {
			t.Errorf("%s is not named blank (Blank = %v)", k, run.Source.Blank)
		}
	}
}

func filled(t *testing.T, run *analyze.Run, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if !run.Source.Has(k) {
			t.Errorf("%s is named blank, but the file has it", k)
		}
	}
}

var nan = math.NaN()

func TestDetect(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"vllm-serve.json":                      VLLM,
		"vllm-append.json":                     VLLM,
		"sglang-bench.jsonl":                   SGLang,
		"guidellm-benchmarks.json":             GuideLLM,
		"aiperf-profile_export_aiperf.json":    AIPerf,
		"aiperf-profile_export.jsonl":          AIPerfRecs,
		"inference-perf-stage.json":            InferencePerf,
		"../../results/testdata/format.golden": "",
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Sniff(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("Sniff = %q, want %q", got, want)
			}
		})
	}
	// By content, not by name: the same bytes under any name.
	b, _ := os.ReadFile(filepath.Join("testdata", "sglang-bench.jsonl"))
	path := filepath.Join(t.TempDir(), "results.json")
	os.WriteFile(path, b, 0o644)
	if got, _ := Sniff(path); got != SGLang {
		t.Errorf("renamed SGLang file: Sniff = %q", got)
	}
	if got := Detect([]byte(`{"type":"header","format":"tokperf-results/1","setup":{}}`)); got != "" {
		t.Errorf("tokperf's header detected as %q", got)
	}
}

// vLLM: one --save-result object. Hand-computed: 98 + 2 failed requests,
// input tok/s = 49000 tokens / 20 s = 2450 (the file has no input
// throughput, so it comes from its totals); vLLM's itl is per chunk, so it
// fills ICL and ITL stays empty; p90 was not asked for, so it is null.
func TestVLLM(t *testing.T) {
	t.Parallel()
	run := read(t, "vllm-serve.json")
	if len(run.Stages) != 1 {
		t.Fatalf("%d stages, want 1", len(run.Stages))
	}
	s := run.Stages[0]
	if s.Requests != 100 || s.OK != 98 || s.Errors[failed] != 2 {
		t.Errorf("requests %d, ok %d, errors %v: want 100, 98, 2 failed", s.Requests, s.OK, s.Errors)
	}
	if s.Concurrency != 16 || s.Rate != 0 {
		t.Errorf("load C=%d rate %g, want C=16 (request rate inf)", s.Concurrency, s.Rate)
	}
	near(t, "aggregate", s.AggregateTokS, 12544.0/20)
	near(t, "wall", s.WallS, 20)
	near(t, "input tok/s", s.InputTokS, 49000.0/20)
	near(t, "requests/s", s.RequestsPerS, 98.0/20)
	near(t, "mean output tokens", s.MeanOutputTokens, 12544.0/98)
	nearDist(t, "TTFT", s.TTFT, 98, 120.5, 110, nan, 250, nan)
	nearDist(t, "TPOT", s.TPOT, 98, 22, 21, nan, 35, nan)
	nearDist(t, "ICL", s.ICL, 98, 21.5, 20, nan, 45, nan)
	if s.ITL.N != 0 || s.E2E.N != 0 || s.DecodeTokS.N != 0 {
		t.Errorf("ITL n %d, E2E n %d, decode n %d: the file has none of them", s.ITL.N, s.E2E.N, s.DecodeTokS.N)
	}
	blank(t, run, "itl_ms", "e2e_ms", "steady_tok_s", "goodput_requests_per_s", "effective_concurrency")
	filled(t, run, "aggregate_tok_s", "errors", "ttft_ms", "icl_ms")
	if run.Setup.Model != "Qwen/Qwen3-8B" || run.Setup.Endpoint != "chat" || run.Setup.Server.Engine != "" {
		t.Errorf("setup: model %q endpoint %q engine %q", run.Setup.Model, run.Setup.Endpoint, run.Setup.Server.Engine)
	}
	if run.Verdict != nil {
		t.Errorf("a verdict from one stage: %+v", run.Verdict)
	}
	b, _ := json.Marshal(run.Stages[0].TTFT)
	if !strings.Contains(string(b), `"p90":null`) {
		t.Errorf("TTFT JSON %s: want p90 null", b)
	}
}

// vLLM with --append-result: one object per line, each a stage; the second
// is open loop (8 req/s, no cap). Its goodput and E2E are there.
func TestVLLMAppended(t *testing.T) {
	t.Parallel()
	run := read(t, "vllm-append.json")
	if len(run.Stages) != 2 || !run.OpenLoop {
		t.Fatalf("%d stages (open loop %v), want 2 with one open", len(run.Stages), run.OpenLoop)
	}
	a, b := run.Stages[0], run.Stages[1]
	if a.Concurrency != 1 || a.Rate != 0 || b.Rate != 8 || b.Concurrency != 0 {
		t.Errorf("stages C=%d rate %g, C=%d rate %g", a.Concurrency, a.Rate, b.Concurrency, b.Rate)
	}
	near(t, "goodput", a.GoodputRequestsPerS, 1.8)
	nearDist(t, "E2E", b.E2E, 200, 690, 680, 740, 800, nan)
	near(t, "aggregate", b.AggregateTokS, 984.6154)
	filled(t, run, "goodput_requests_per_s", "e2e_ms")
}

// SGLang: bare Infinity (Python's json) for the rate, no failed count (errors
// blank), the server's own info (an SGLang server, TP 2), and concurrency =
// Σ E2E / duration = 40 × 1 s / 10 s = 4.
func TestSGLang(t *testing.T) {
	t.Parallel()
	run := read(t, "sglang-bench.jsonl")
	if len(run.Stages) != 2 {
		t.Fatalf("%d stages, want 2", len(run.Stages))
	}
	s := run.Stages[0]
	if s.Concurrency != 4 || s.Rate != 0 || s.Requests != 40 || s.OK != 40 {
		t.Errorf("C=%d rate %g requests %d ok %d", s.Concurrency, s.Rate, s.Requests, s.OK)
	}
	near(t, "aggregate", s.AggregateTokS, 10240.0/10)
	near(t, "effective concurrency", s.EffectiveConcurrency, 40*1.0/10)
	nearDist(t, "TTFT", s.TTFT, 40, 50, 48, 60, 70, nan)
	nearDist(t, "E2E", s.E2E, 40, 1000, 990, 1030, 1100, nan)
	nearDist(t, "ICL", s.ICL, 40, 3.73, 3.6, nan, 8, nan)
	blank(t, run, "errors", "itl_ms", "decode_tok_s")
	su := run.Setup
	if su.Server.Engine != "sglang" || su.Server.Version != "0.5.4" || su.GPUs != 2 || su.Model != "meta-llama/Llama-3.1-8B-Instruct" ||
		su.Endpoint != "chat" || su.Workload.InputTokens != 1024 || su.Workload.OutputTokens != 256 {
		t.Errorf("setup %+v", su)
	}
}

// GuideLLM: a concurrent (2 streams) and a constant-rate benchmark. Hand-
// computed over the measured windows: 2560 tokens / (1010 − 1000) s = 256
// tok/s and 20 ok / 10 s = 2 req/s; 7680 / 15 s = 512 tok/s. Latency is
// in seconds in the file, ms here; its ITL (a per-request average,
// token-weighted) fills TPOT, and its TPOT (first token included) nothing.
func TestGuideLLM(t *testing.T) {
	t.Parallel()
	run := read(t, "guidellm-benchmarks.json")
	if len(run.Stages) != 2 || !run.OpenLoop {
		t.Fatalf("%d stages (open %v), want 2", len(run.Stages), run.OpenLoop)
	}
	var c, r *analyze.Stage
	for i := range run.Stages {
		if run.Stages[i].Rate > 0 {
			r = &run.Stages[i]
		} else {
			c = &run.Stages[i]
		}
	}
	if c == nil || r == nil || c.Concurrency != 2 || r.Rate != 4 {
		t.Fatalf("stages: %+v", run.Stages)
	}
	if c.Requests != 23 || c.OK != 20 || c.Errors[failed] != 1 || c.Cancelled != 2 {
		t.Errorf("requests %d ok %d errors %v cancelled %d", c.Requests, c.OK, c.Errors, c.Cancelled)
	}
	near(t, "wall", c.WallS, 10)
	near(t, "aggregate", c.AggregateTokS, 2560.0/10)
	near(t, "requests/s", c.RequestsPerS, 20.0/10)
	near(t, "input tok/s", c.InputTokS, 10240.0/10)
	near(t, "effective concurrency", c.EffectiveConcurrency, 1.99)
	near(t, "tokens per chunk", c.TokensPerChunk, 1)
	nearDist(t, "TTFT", c.TTFT, 20, 45, 44, 60, 78, 80)
	nearDist(t, "E2E", c.E2E, 20, 998, 990, 1100, 1190, 1200)
	// Its inter_token_latency_ms is a per-request average (TPOT), counted
	// over the requests, not the 2540 decode tokens that weight it.
	nearDist(t, "TPOT", c.TPOT, 20, 7.5, 7.4, 8.8, 11, 12)
	near(t, "TPOT p95", c.TPOT.P95, 8.8)
	near(t, "rate stage aggregate", r.AggregateTokS, 7680.0/15)
	if c.ITL.N != 0 {
		t.Errorf("ITL filled from GuideLLM's per-request average: %+v", c.ITL)
	}
	blank(t, run, "itl_ms", "icl_ms", "decode_tok_s", "steady_tok_s")
	if run.Setup.Model != "Qwen/Qwen3-8B" || run.Setup.URL != "http://gpu-host:8000" {
		t.Errorf("setup: model %q url %q", run.Setup.Model, run.Setup.URL)
	}
}

// AIPerf's summary: its ITL is per request (tokperf's TPOT), its
// inter-chunk latency is ICL, and 1/ITL per user is decode tok/s.
func TestAIPerfSummary(t *testing.T) {
	t.Parallel()
	run := read(t, "aiperf-profile_export_aiperf.json")
	s := run.Stages[0]
	if s.Requests != 103 || s.OK != 100 || s.Errors[failed] != 3 || s.Concurrency != 8 {
		t.Errorf("requests %d ok %d errors %v C=%d", s.Requests, s.OK, s.Errors, s.Concurrency)
	}
	near(t, "wall", s.WallS, 20)
	near(t, "aggregate", s.AggregateTokS, 12800.0/20)
	near(t, "input tok/s", s.InputTokS, 55000.0/20)
	nearDist(t, "TTFT", s.TTFT, 100, 110, 105, 140, 180, 190)
	nearDist(t, "TPOT", s.TPOT, 100, 11.73, 11.6, 12.5, 13.8, 14)
	nearDist(t, "ICL", s.ICL, 100, 11.7, 11.5, 13, 16, 30)
	nearDist(t, "decode", s.DecodeTokS, 100, 85.3, 86.2, 88, 90.5, 91.7)
	nearDist(t, "E2E", s.E2E, 100, 1600, 1580, 1750, 1900, 1950)
	blank(t, run, "itl_ms", "request_tok_s", "tokens_per_chunk")
	if run.Setup.Model != "Qwen/Qwen3-8B" || run.Setup.URL != "http://gpu-host:8000" || run.Setup.Endpoint != "chat" {
		t.Errorf("setup %+v", run.Setup)
	}
}

// AIPerf's per-request records are folded by tokperf's definitions. By
// hand: three ok requests [0, 1] s, [0.5, 2] s, [1, 1.5] s, one failed:
// wall 2 s, 34 tokens → 17 tok/s, 1.5 req/s, Σ busy 3 s / 2 s = 1.5
// in flight; TTFT {50, 100, 200} → p50 100; TPOT {100, 100, 50}; request
// tok/s {10/1, 14/1.5, 10/0.5}; 31 gaps (9 + 13 of 100 ms, 9 of 50 ms);
// 34 tokens over 34 chunks.
func TestAIPerfRecords(t *testing.T) {
	t.Parallel()
	run := read(t, "aiperf-profile_export.jsonl")
	s := run.Stages[0]
	if s.Requests != 4 || s.OK != 3 || s.Errors[record.Status("ServerError")] != 1 {
		t.Errorf("requests %d ok %d errors %v", s.Requests, s.OK, s.Errors)
	}
	near(t, "wall", s.WallS, 2)
	near(t, "aggregate", s.AggregateTokS, 34.0/2)
	near(t, "requests/s", s.RequestsPerS, 3.0/2)
	near(t, "effective concurrency", s.EffectiveConcurrency, (1+1.5+0.5)/2)
	near(t, "tokens per chunk", s.TokensPerChunk, 34.0/34)
	nearDist(t, "TTFT", s.TTFT, 3, 350.0/3, 100, 200, 200, 200)
	nearDist(t, "TPOT", s.TPOT, 3, 250.0/3, 100, 100, 100, 100)
	nearDist(t, "decode", s.DecodeTokS, 3, 40.0/3, 10, 20, 20, 20)
	nearDist(t, "request tok/s", s.RequestTokS, 3, (10+14/1.5+20)/3, 10, 20, 20, 20)
	nearDist(t, "ICL", s.ICL, 31, (22*100+9*50)/31.0, 100, 100, 100, 100)
	blank(t, run, "itl_ms", "steady_tok_s")
}

// inference-perf: a concurrent stage's lifecycle report, written by
// testdata/inference-perf-stage.py as its summarize_requests would from
// known timings (seconds). By hand from those timings: 4 ok + 1 failed,
// window 0.8 s (first start 0 → last end 0.8, the failure's included),
// 18 output tokens → 22.5 tok/s, 5 req/s, 124 prompt tokens → 155 tok/s;
// TTFT {100, 120, 79, 109} ms, numpy's median (100 + 109)/2, p90
// 109 + 0.7·11; TPOT (last − first chunk)/(n − 1) = {77.5, 77.5, 72.5,
// 65}; 14 chunk gaps (six of 70 ms, seven of 80, one of 60): mean 1040/14,
// median 75; E2E {420, 440, 379, 249}.
func TestInferencePerf(t *testing.T) {
	t.Parallel()
	run := read(t, "inference-perf-stage.json")
	s := run.Stages[0]
	if s.Requests != 5 || s.OK != 4 || s.Errors[failed] != 1 || s.Concurrency != 2 || s.Rate != 0 {
		t.Errorf("requests %d ok %d errors %v C=%d rate %g", s.Requests, s.OK, s.Errors, s.Concurrency, s.Rate)
	}
	near(t, "wall", s.WallS, 0.8)
	near(t, "aggregate", s.AggregateTokS, 18/0.8)
	near(t, "requests/s", s.RequestsPerS, 4/0.8)
	near(t, "input tok/s", s.InputTokS, 124/0.8)
	if s.OutputTokens != 18 || s.PromptTokens != 124 {
		t.Errorf("tokens %d out, %d in", s.OutputTokens, s.PromptTokens)
	}
	nearDist(t, "TTFT", s.TTFT, 4, 102, 104.5, 109+0.7*11, 109+0.97*11, 120)
	nearDist(t, "TPOT", s.TPOT, 4, 73.125, 75, 77.5, 77.5, 77.5)
	nearDist(t, "E2E", s.E2E, 4, 372, 399.5, 434, 439.4, 440)
	// Its ITL is per chunk or per token by a config the report does not
	// hold: blank in report and compare, kept as stated for explain.
	blank(t, run, "itl_ms", "icl_ms", "decode_tok_s", "request_tok_s", "tokens_per_chunk", "effective_concurrency")
	filled(t, run, "ttft_ms", "tpot_ms", "e2e_ms", "aggregate_tok_s", "requests_per_s", "wall_s")
	if s.ICL.N != 0 {
		t.Errorf("ICL read, n = %d: its definition is not known", s.ICL.N)
	}
	stated, err := ReadStated(filepath.Join("testdata", "inference-perf-stage.json"))
	if err != nil {
		t.Fatal(err)
	}
	nearDist(t, "stated ICL", stated.Stages[0].ICL, 4, 1040.0/14, 75, 80, 80, 80)
}

// An open-loop stage states its rate; the run's summary states no load;
// an older report's prompt_len and output_len give the totals (mean × n).
func TestInferencePerfLoads(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, body string
		rate       float64
		conc, out  int
	}{
		{"rate", `{"load_summary":{"count":2,"requested_rate":4.0,"achieved_rate":3.9},"successes":{"count":2,"output_len":{"mean":10.5}},"failures":{"count":0}}`, 4, 0, 21},
		{"summary", `{"load_summary":{"count":2},"successes":{"count":2,"output_tokens":{"total":7}},"failures":{"count":0}}`, 0, 0, 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			run, err := ReadFrom(strings.NewReader(c.body), "x.json")
			if err != nil {
				t.Fatal(err)
			}
			s := run.Stages[0]
			if s.Rate != c.rate || s.Concurrency != c.conc || s.OutputTokens != c.out {
				t.Errorf("rate %g C=%d output tokens %d, want %g, %d, %d", s.Rate, s.Concurrency, s.OutputTokens, c.rate, c.conc, c.out)
			}
		})
	}
}

// Bad input names file:line:field, never panics.
func TestErrors(t *testing.T) {
	t.Parallel()
	guide, _ := os.ReadFile(filepath.Join("testdata", "guidellm-benchmarks.json"))
	streams := bytes.Replace(guide, []byte(`"streams": 2`), []byte(`"streams": "two"`), 1)
	line := bytes.Count(guide[:bytes.Index(guide, []byte(`"streams": 2`))], []byte("\n")) + 1
	aiperf, _ := os.ReadFile(filepath.Join("testdata", "aiperf-profile_export_aiperf.json"))
	unit := bytes.Replace(aiperf, []byte(`"unit": "sec"`), []byte(`"unit": "fortnights"`), 1)
	unitLine := bytes.Count(aiperf[:bytes.Index(aiperf, []byte(`"unit": "sec"`))], []byte("\n")) + 1
	for _, c := range []struct {
		name, body, want string
	}{
		{"vllm negative duration", `{"model_id":"m","mean_ttft_ms":1,"completed":1,"duration":-3}`, "x.json:1: duration: want a finite figure ≥ 0, got -3"},
		{"vllm no completed", `{"model_id":"m","mean_ttft_ms":1}`, "x.json:1: completed: missing"},
		{"sglang second line", `{"server_info":{},"completed":1}` + "\n" + `{"server_info":{},"completed":1,"max_concurrency":"many"}`, "x.json:2: max_concurrency: want a number"},
		{"vllm zero rate", `{"model_id":"m","mean_ttft_ms":1,"completed":1,"request_rate":0}`, "x.json:1: request_rate: want a rate > 0"},
		{"guidellm strategy", string(streams), "x.json:" + itoa(line) + ": benchmarks.0.config.strategy.streams: want a number"},
		{"aiperf unit", string(unit), "x.json:" + itoa(unitLine) + ": benchmark_duration.unit: unknown time unit"},
		{"aiperf record", `{"metadata":{"request_start_ns":5,"request_end_ns":1,"benchmark_phase":"profiling"},"metrics":{}}`, "x.json:1: metadata.request_end_ns: ends before it starts"},
		{"inference-perf ttft", "{\"load_summary\":{},\n\"successes\":{\"count\":1,\"latency\":{\"time_to_first_token\":{\"mean\":\"soon\"}}}}", "x.json:2: successes.latency.time_to_first_token.mean: want a number"},
		{"inference-perf count", `{"load_summary":{},"successes":{"count":-1},"failures":{}}`, "x.json:1: successes.count: want a finite figure ≥ 0"},
		{"inference-perf no successes", `{"load_summary":{},"failures":{"count":0}}`, "x.json:1: not a result file"},
		{"unknown", `{"hello":1}`, "x.json:1: not a result file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadFrom(strings.NewReader(c.body), "x.json")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want it to hold %q", err, c.want)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestPythonLiterals(t *testing.T) {
	t.Parallel()
	got := string(pythonLiterals([]byte(`{"a": Infinity, "b": -Infinity, "c": NaN, "s": "NaN Infinity \" NaN"}`)))
	want := `{"a": "Infinity", "b": "-Infinity", "c": "NaN", "s": "NaN Infinity \" NaN"}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// Blank lists only figures a mapping can leave unset.
func TestBlankNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"vllm-serve.json", "sglang-bench.jsonl", "guidellm-benchmarks.json", "aiperf-profile_export_aiperf.json", "aiperf-profile_export.jsonl"} {
		run := read(t, name)
		for _, b := range run.Source.Blank {
			if !slices.Contains(analyze.ForeignFigures, b) {
				t.Errorf("%s: %q is not a stage figure", name, b)
			}
		}
		if len(run.Source.Definitions) < 3 {
			t.Errorf("%s: %d definitions", name, len(run.Source.Definitions))
		}
	}
}

// Files that would exhaust memory are refused with one line, without
// being read: a link to /dev/zero, a GuideLLM report of 3 GB (sparse: it
// costs no disk), a vLLM line longer than the line cap.
//
// Serial: it lowers the package's maxLine.
func TestReadBounded(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Skip(err)
	}
	huge := filepath.Join(dir, "guidellm.json")
	if err := os.WriteFile(huge, []byte(`{"metadata": {}, "benchmarks": [`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 3<<30); err != nil {
		t.Skip(err)
	}
	long := filepath.Join(dir, "vllm.jsonl")
	line := `{"model_id": "m", "mean_ttft_ms": 1, "x": "` + strings.Repeat("a", 4<<10) + `"}` + "\n"
	os.WriteFile(long, []byte(line), 0o600)
	defer func(n int) { maxLine = n }(maxLine)
	maxLine = 1 << 10
	for _, c := range []struct{ name, path, want string }{
		{"device", zero, "is a character device"},
		{"huge report", huge, "over the 1024 MiB a guidellm report may be"},
		{"long line", long, "vllm.jsonl line 1: a line over"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Read(c.path); err == nil || !strings.Contains(err.Error(), c.want) || strings.Count(err.Error(), "\n") > 0 {
				t.Fatalf("got %v, want one line saying %q", err, c.want)
			}
		})
	}
}
