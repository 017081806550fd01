package foreign

import (
	"bufio"
	"fmt"
	"math"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// vLLM's `bench serve --save-result` and SGLang's `bench_serving` write one
// flat object per run (vLLM one per line with --append-result, SGLang one
// per line always): totals, throughputs, and mean_/median_/std_/pNN_ figures
// per metric in ms. Each object is one stage here.

// flatNames are a tool's names for TTFT, TPOT, per-chunk ITL and E2E.
type flatNames struct{ ttft, tpot, itl, e2e string }

var flatMetric = map[string]flatNames{
	VLLM:   {"ttft", "tpot", "itl", "e2el"},
	SGLang: {"ttft", "tpot", "itl", "e2e_latency"},
}

func readFlat(r *bufio.Reader, name, tool string, stated bool) (*analyze.Run, error) {
	var stages []summary.Stage
	var samples []*analyze.Samples
	var setup record.Setup
	var blank []string
	perRequest := false
	err := lines(r, name, func(line []byte, n int) error {
		d := &doc{file: name, data: pythonLiterals(line), line: n}
		o, err := d.root()
		if err != nil {
			return err
		}
		s, x, su, b, err := flatStage(o, tool, stated)
		if err != nil {
			return err
		}
		if len(stages) == 0 {
			setup = su
		}
		stages = append(stages, s)
		samples = append(samples, x)
		blank = merge(blank, b)
		perRequest = perRequest || x != nil
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("%s:1: no results in the file", name)
	}
	src := flatSource(tool, blank)
	if perRequest {
		src.Definitions = append(src.Definitions, vllmPerRequest)
	}
	return analyze.ForeignRunSamples(name, setup, stages, samples, src), nil
}

// vllmPerRequest says how vLLM's per-request lists are read.
const vllmPerRequest = "where the file keeps vLLM's per-request lists (latencies always; ttfts, itls, output_lens and errors with --save-detailed), E2E, TTFT, TPOT = (latency − ttft)/(output_len − 1), decode tok/s = 1/TPOT, request tok/s = output_len / latency and ICL (the pooled itls) are computed by tokperf from them (nearest-rank percentiles) over the requests that succeeded (error \"\", or latency > 0 where the file keeps no errors), and compare tests them"

// percentiles reads mean_M_ms, median_M_ms (or p50_M_ms), p90_M_ms,
// p99_M_ms and max_M_ms; numpy interpolates its percentiles linearly.
func percentiles(o obj, m string, n int) (stats.Dist, error) {
	var v [7]float64
	for i, k := range []string{"mean_%s_ms", "median_%s_ms", "p50_%s_ms", "p90_%s_ms", "p99_%s_ms", "max_%s_ms", "p95_%s_ms"} {
		x, err := o.figure(fmt.Sprintf(k, m))
		if err != nil {
			return none(), err
		}
		v[i] = x
	}
	if math.IsNaN(v[1]) {
		v[1] = v[2]
	}
	d := dist(n, v[0], v[1], v[3], v[4], v[5])
	if d.N > 0 {
		d.P95 = v[6]
	}
	return d, nil
}

// flatStage is one result object's stage; with stated, its summaries
// only, never replaced by figures from its per-request lists.
func flatStage(o obj, tool string, stated bool) (summary.Stage, *analyze.Samples, record.Setup, []string, error) {
	s, su, blank, err := flatSummary(o, tool)
	if err != nil || tool != VLLM || stated {
		return s, nil, su, blank, err
	}
	failedN, _ := o.count("failed")
	x, filled, err := vllmRequests(o, &s, failedN)
	if err != nil {
		return s, nil, su, nil, err
	}
	var kept []string
	for _, b := range blank {
		found := false
		for _, f := range filled {
			found = found || f == b
		}
		if !found {
			kept = append(kept, b)
		}
	}
	return s, x, su, kept, nil
}

// flatSummary is the stage of one vLLM or SGLang result object from its
// summary figures.
func flatSummary(o obj, tool string) (summary.Stage, record.Setup, []string, error) {
	s := blankStage()
	names := flatMetric[tool]
	completed, err := o.count("completed")
	if err != nil {
		return s, record.Setup{}, nil, err
	}
	if completed < 0 {
		return s, record.Setup{}, nil, o.errorf("completed", "missing: every %s result has it", tool)
	}
	failedN, err := o.count("failed")
	if err != nil {
		return s, record.Setup{}, nil, err
	}
	filled := []string{"wall_s", "output_tokens", "prompt_tokens", "aggregate_tok_s", "input_tok_s", "total_tok_s", "requests_per_s"}
	s.OK, s.Requests = completed, completed
	if failedN >= 0 {
		s.Requests += failedN
		if failedN > 0 {
			s.Errors = map[record.Status]int{failed: failedN}
		}
		filled = append(filled, "errors")
	}
	out, err := o.count("total_output_tokens")
	if err != nil {
		return s, record.Setup{}, nil, err
	}
	in, err := o.count("total_input_tokens")
	if err != nil {
		return s, record.Setup{}, nil, err
	}
	s.OutputTokens, s.PromptTokens = max(out, 0), max(in, 0)
	var wall, agg, reqs, total, input float64
	for _, f := range []struct {
		key string
		v   *float64
	}{{"duration", &wall}, {"output_throughput", &agg}, {"request_throughput", &reqs}, {"total_token_throughput", &total}, {"total_throughput", &total}, {"input_throughput", &input}} {
		x, err := o.figure(f.key)
		if err != nil {
			return s, record.Setup{}, nil, err
		}
		if !math.IsNaN(x) {
			*f.v = x
		}
	}
	if input == 0 && wall > 0 {
		input = float64(s.PromptTokens) / wall
	}
	s.WallS, s.AggregateTokS, s.RequestsPerS, s.TotalTokS, s.InputTokS = wall, agg, reqs, total, input
	if completed > 0 {
		s.MeanOutputTokens = float64(s.OutputTokens) / float64(completed)
	}
	if g, err := o.figure("request_goodput"); err != nil {
		return s, record.Setup{}, nil, err
	} else if !math.IsNaN(g) {
		s.GoodputRequestsPerS = g
		filled = append(filled, "goodput_requests_per_s")
	}
	if c, err := o.figure("concurrency"); err != nil {
		return s, record.Setup{}, nil, err
	} else if !math.IsNaN(c) && tool == SGLang {
		s.EffectiveConcurrency = c // Σ E2E / duration: tokperf's definition
		filled = append(filled, "effective_concurrency")
	}
	for _, m := range []struct {
		name, key string
		d         *stats.Dist
	}{{names.ttft, "ttft_ms", &s.TTFT}, {names.tpot, "tpot_ms", &s.TPOT}, {names.itl, "icl_ms", &s.ICL}, {names.e2e, "e2e_ms", &s.E2E}} {
		d, err := percentiles(o, m.name, completed)
		if err != nil {
			return s, record.Setup{}, nil, err
		}
		*m.d = d
		if d.N > 0 {
			filled = append(filled, m.key)
		}
	}
	if err := flatLoad(o, &s); err != nil {
		return s, record.Setup{}, nil, err
	}
	return s, flatSetup(o, tool, s), blankExcept(filled...), nil
}

// flatLoad reads the stage's load: max_concurrency (null: no cap) and
// request_rate (inf: every request sent at once; SGLang's "trace": the
// trace's times).
func flatLoad(o obj, s *summary.Stage) error {
	c, err := o.count("max_concurrency")
	if err != nil {
		return err
	}
	s.Concurrency = max(c, 0)
	if o.str("request_rate") == "trace" {
		return nil
	}
	rate, ok, err := o.num("request_rate")
	if err != nil {
		return err
	}
	if ok && !math.IsInf(rate, 0) {
		if rate <= 0 {
			return o.errorf("request_rate", "want a rate > 0 or inf, got %g", rate)
		}
		s.Rate = rate
	}
	return nil
}

func flatSetup(o obj, tool string, s summary.Stage) record.Setup {
	su := record.Setup{Command: tool + " benchmark", Model: o.str("model_id")}
	backend := o.str("backend")
	if backend == "" {
		backend = o.str("endpoint_type")
	}
	switch {
	case strings.Contains(backend, "chat"):
		su.Endpoint = "chat"
	case backend == "sglang" || backend == "sglang-native":
		su.Endpoint = "generate"
	case backend != "":
		su.Endpoint = "completions"
	}
	su.Route = backend
	if s.Concurrency > 0 {
		su.Load.Concurrency = []int{s.Concurrency}
	}
	su.Load.Rate = s.Rate
	if n, _ := o.count("num_prompts"); n > 0 {
		su.Load.Requests = n
	}
	if tool == VLLM {
		su.Command = "vllm bench serve"
		return su
	}
	su.Command = "sglang.bench_serving"
	if info, ok, _ := o.sub("server_info"); ok {
		// bench_serving asks the server's /get_server_info: an SGLang server.
		su.Server.Engine = "sglang"
		su.Server.Version = info.str("version")
		su.Model = info.str("model_path")
		if n, _ := info.count("tp_size"); n > 0 {
			su.GPUs = n
		}
	}
	if o.str("dataset_name") == "random" {
		if n, _ := o.count("random_input_len"); n > 0 {
			su.Workload.InputTokens = n
		}
		if n, _ := o.count("random_output_len"); n > 0 {
			su.Workload.OutputTokens = n
		}
	}
	return su
}

func flatSource(tool string, blank []string) *analyze.Source {
	if tool == VLLM {
		return &analyze.Source{Tool: VLLM, Format: "vLLM bench serve --save-result JSON", Blank: blank, Definitions: []string{
			"TTFT is vLLM's ttft: from sending to the first streamed chunk with output (tokperf's TTFT)",
			"TPOT is vLLM's tpot: (E2E − TTFT) / (output tokens − 1) per request, the first token excluded (tokperf's TPOT when the first chunk holds one token)",
			"ICL is vLLM's itl: the gaps between streamed chunks, pooled over requests and not divided by the tokens a chunk holds; it is per chunk, so it fills tokperf's ICL and tokperf's per-token ITL is blank",
			"E2E is vLLM's e2el; aggregate is its output_throughput (output tokens / duration), wall its duration (from the first send to the last answer)",
			"vLLM's percentiles interpolate linearly between samples (numpy), tokperf's are nearest-rank; its p90 and max are written only when --metric-percentiles asked for them",
			"failed requests are vLLM's failed count, without their kind",
		}}
	}
	return &analyze.Source{Tool: SGLang, Format: "SGLang bench_serving JSONL", Blank: blank, Definitions: []string{
		"TTFT is SGLang's ttft: from sending to the first streamed chunk with output (tokperf's TTFT)",
		"TPOT is SGLang's tpot: (E2E − TTFT) / (output tokens − 1) per request, the first token excluded (tokperf's TPOT when the first chunk holds one token)",
		"ICL is SGLang's itl: the gaps between streamed chunks, pooled over requests and not divided by the tokens a chunk holds; it is per chunk, so it fills tokperf's ICL and tokperf's per-token ITL is blank",
		"E2E is SGLang's e2e_latency; aggregate is its output_throughput (output tokens / duration); effective concurrency is its concurrency (Σ E2E / duration, tokperf's definition)",
		"SGLang's percentiles interpolate linearly between samples (numpy), tokperf's are nearest-rank",
		"SGLang's file counts no failed requests: errors are blank, not zero",
	}}
}
