package foreign

import (
	"math"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// inference-perf (kubernetes-sigs/inference-perf) writes one lifecycle
// report per stage, stage_N_lifecycle_metrics.json, and one over the run,
// summary_lifecycle_metrics.json, each the model_dump of its
// ResponsesSummary (inference_perf/reportgen/base.py, summarize_requests):
// {benchmark_time_seconds, load_summary: {count, requested_rate,
// concurrency, …}, successes: {count, latency: {request_latency,
// time_to_first_token, time_per_output_token, inter_token_latency, …},
// throughput: {output_tokens_per_sec, requests_per_sec, …}, prompt_len or
// prompt_tokens, output_len, output_tokens}, failures: {count, …}}. Every
// time is in seconds; each summary is {mean, min, max, median, pN} from
// numpy. One file is one stage here.

var inferencePerfDefinitions = []string{
	"TTFT is inference-perf's time_to_first_token: from before the request is posted (a new connection counts) to its first chunk carrying text (tokperf's TTFT); a request of one such chunk has none",
	"TPOT is inference-perf's time_per_output_token: (last text chunk − first) / (output tokens − 1) per request, the first token excluded (tokperf's TPOT); its normalized_time_per_output_token (latency / output tokens) has no tokperf figure and is not shown",
	"E2E is inference-perf's request_latency (s, shown in ms), from before the post to the end of the stream ([DONE])",
	"aggregate and requests/s are inference-perf's output_tokens_per_sec and requests_per_sec: the successful requests' output tokens (its tokenizer's count unless use_server_output_tokens) and count over the last end − the first start of every request of the stage; percentiles are numpy's (linear), n the successful requests",
}

// inferencePerfITL says what becomes of its inter_token_latency: its
// definition hangs on a config the report does not hold.
var inferencePerfITL = map[bool]string{
	false: "inference-perf's inter_token_latency is not shown: without a tokenizer in its config it is the gaps between text chunks, pooled (tokperf's ICL), with one it is per token, a chunk's tokens stamped at its arrival (k − 1 zero gaps for a chunk of k tokens), and the report does not say which; tokperf's ITL and ICL are blank",
	true:  "ICL is inference-perf's inter_token_latency as stated: the gaps between text chunks, pooled, where its config names no tokenizer or each chunk holds one token (with a tokenizer and chunks of k tokens, k − 1 of its gaps are 0)",
}

// inferencePerfRun is the report's one stage; stated keeps its
// inter_token_latency as ICL (explain sets it beside tokperf's chunk gaps).
func inferencePerfRun(root obj, stated bool) (*analyze.Run, error) {
	s := blankStage()
	filled := []string{"errors"}
	if err := inferencePerfLoad(root, &s); err != nil {
		return nil, err
	}
	succ, ok, err := root.sub("successes")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, root.errorf("successes", "missing: every inference-perf lifecycle report has it")
	}
	if s.OK, err = succ.count("count"); err != nil {
		return nil, err
	}
	if s.OK < 0 {
		return nil, succ.errorf("count", "missing")
	}
	fails := 0
	if f, ok, err := root.sub("failures"); err != nil {
		return nil, err
	} else if ok {
		if fails, err = f.count("count"); err != nil {
			return nil, err
		}
		fails = max(fails, 0)
	}
	s.Requests = s.OK + fails
	if fails > 0 {
		s.Errors = map[record.Status]int{failed: fails}
	}
	more, err := inferencePerfTokens(root, succ, &s)
	if err != nil {
		return nil, err
	}
	filled = append(filled, more...)
	more, err = inferencePerfLatency(succ, &s, stated)
	if err != nil {
		return nil, err
	}
	filled = append(filled, more...)
	src := &analyze.Source{Tool: InferencePerf, Format: "inference-perf lifecycle metrics JSON", Blank: blankExcept(filled...),
		Definitions: append(append([]string(nil), inferencePerfDefinitions...), inferencePerfITL[stated])}
	return analyze.ForeignRun(root.d.file, record.Setup{Command: "inference-perf"}, []summary.Stage{s}, src), nil
}

// inferencePerfLoad reads the stage's load: a concurrent stage's
// concurrency, else its requested rate; the run's summary states neither.
func inferencePerfLoad(root obj, s *summary.Stage) error {
	ls, ok, err := root.sub("load_summary")
	if err != nil || !ok {
		return err
	}
	c, err := ls.count("concurrency")
	if err != nil {
		return err
	}
	if c > 0 {
		s.Concurrency = c
		return nil
	}
	rate, err := ls.figure("requested_rate")
	if err != nil {
		return err
	}
	if !math.IsNaN(rate) && rate > 0 {
		s.Rate = rate
	}
	return nil
}

// inferencePerfTokens reads the token totals, the window and the rates.
func inferencePerfTokens(root, succ obj, s *summary.Stage) ([]string, error) {
	var filled []string
	out, err := inferencePerfTotal(succ, "output_tokens", "output_len", s.OK)
	if err != nil {
		return nil, err
	}
	in, err := inferencePerfTotal(succ, "prompt_tokens", "prompt_len", s.OK)
	if err != nil {
		return nil, err
	}
	if !math.IsNaN(out) {
		s.OutputTokens, s.MeanOutputTokens = int(math.Round(out)), out/float64(max(s.OK, 1))
		filled = append(filled, "output_tokens")
	}
	if !math.IsNaN(in) {
		s.PromptTokens = int(math.Round(in))
		filled = append(filled, "prompt_tokens")
	}
	tp, ok, err := succ.sub("throughput")
	if err != nil || !ok {
		return filled, err
	}
	var v [3]float64
	for i, k := range []string{"output_tokens_per_sec", "requests_per_sec", "input_tokens_per_sec"} {
		if v[i], err = tp.figure(k); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		v    float64
		key  string
		into *float64
	}{{v[0], "aggregate_tok_s", &s.AggregateTokS}, {v[1], "requests_per_s", &s.RequestsPerS}, {v[2], "input_tok_s", &s.InputTokS}} {
		if !math.IsNaN(f.v) {
			*f.into = f.v
			filled = append(filled, f.key)
		}
	}
	if !math.IsNaN(v[0]) && !math.IsNaN(v[2]) {
		s.TotalTokS = v[0] + v[2]
		filled = append(filled, "total_tok_s")
	}
	wall, err := root.figure("benchmark_time_seconds")
	if err != nil {
		return nil, err
	}
	if math.IsNaN(wall) && v[1] > 0 { // older reports: requests_per_sec is count / the window
		wall = float64(s.OK) / v[1]
	}
	if !math.IsNaN(wall) && wall > 0 {
		s.WallS = wall
		filled = append(filled, "wall_s")
	}
	return filled, nil
}

// inferencePerfTotal is the successful requests' total of a token count:
// its summary's total where the report has one (newer reports), else
// its mean × n (older ones: prompt_len, output_len); NaN when absent.
func inferencePerfTotal(succ obj, key, old string, n int) (float64, error) {
	for _, k := range []string{key, old} {
		o, ok, err := succ.sub(k)
		if err != nil {
			return 0, err
		}
		if !ok {
			continue
		}
		if t, err := o.figure("total"); err != nil || !math.IsNaN(t) {
			return t, err
		}
		if m, err := o.figure("mean"); err != nil || !math.IsNaN(m) {
			return m * float64(n), err
		}
	}
	return math.NaN(), nil
}

// inferencePerfLatency reads successes.latency's summaries, s → ms; its
// inter_token_latency only when stated.
func inferencePerfLatency(succ obj, s *summary.Stage, stated bool) ([]string, error) {
	lat, ok, err := succ.sub("latency")
	if err != nil || !ok {
		return nil, err
	}
	var filled []string
	for _, f := range []struct {
		name, key string
		d         *stats.Dist
	}{{"time_to_first_token", "ttft_ms", &s.TTFT}, {"time_per_output_token", "tpot_ms", &s.TPOT},
		{"inter_token_latency", "icl_ms", &s.ICL}, {"request_latency", "e2e_ms", &s.E2E}} {
		if f.key == "icl_ms" && !stated {
			continue
		}
		d, err := inferencePerfDist(lat, f.name, s.OK)
		if err != nil {
			return nil, err
		}
		*f.d = d
		if d.N > 0 {
			filled = append(filled, f.key)
		}
	}
	return filled, nil
}

// inferencePerfDist is summary name of o in ms: numpy's mean, median (its
// key for p50) and percentiles of seconds; N = 0 when the report has none
// (null: no request had the figure).
func inferencePerfDist(o obj, name string, n int) (stats.Dist, error) {
	m, ok, err := o.sub(name)
	if err != nil || !ok {
		return none(), err
	}
	var v [6]float64
	for i, k := range []string{"mean", "median", "p90", "p99", "max", "p95"} {
		if v[i], err = m.figure(k); err != nil {
			return none(), err
		}
		v[i] *= 1000
	}
	if math.IsNaN(v[1]) {
		if v[1], err = m.figure("p50"); err != nil {
			return none(), err
		}
		v[1] *= 1000
	}
	d := dist(n, v[0], v[1], v[2], v[3], v[4])
	if d.N > 0 {
		d.P95 = v[5]
	}
	return d, nil
}
