package foreign

import (
	"math"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// GuideLLM's report (benchmarks.json) holds the run's config and one
// benchmark per strategy of its profile (synchronous, concurrent streams,
// throughput, constant or Poisson rates): each is a stage here. Its
// distributions are StatusBreakdowns of DistributionSummary (mean, median,
// max, count, percentiles p50…p999); only the successful requests' are read.

func guidellmRun(root obj) (*analyze.Run, error) {
	benches, err := root.list("benchmarks")
	if err != nil {
		return nil, err
	}
	if len(benches) == 0 {
		return nil, root.errorf("benchmarks", "no benchmarks in the report")
	}
	var stages []summary.Stage
	var blank []string
	for _, b := range benches {
		s, bl, err := guidellmStage(b)
		if err != nil {
			return nil, err
		}
		stages = append(stages, s)
		blank = merge(blank, bl)
	}
	src := &analyze.Source{Tool: GuideLLM, Format: "GuideLLM benchmarks report JSON", Blank: blank, Definitions: []string{
		"TTFT is GuideLLM's time_to_first_token_ms: from the request's start to its first token iteration (tokperf's TTFT)",
		"TPOT is GuideLLM's inter_token_latency_ms: (last token − first token) / (output tokens − 1) per request, a per-request average like tokperf's TPOT (its percentiles are of per-request averages, not of single gaps, so tokperf's per-gap ITL is blank); GuideLLM weights its mean by each request's decode tokens",
		"GuideLLM's time_per_output_token_ms includes the first token ((last token − start) / output tokens): tokperf has no such figure, so it is not shown",
		"E2E is GuideLLM's request_latency (s, shown in ms); tokens per chunk is its output_tokens_per_iteration mean",
		"aggregate is the successful requests' output tokens / the measured window (scheduler_metrics.measure_end_time − measure_start_time), tokperf's definition over GuideLLM's totals; effective concurrency is its request_concurrency mean",
		"failed requests are GuideLLM's errored ones; its incomplete ones (still running when the benchmark ended) are counted as cancelled",
	}}
	return analyze.ForeignRun(root.d.file, guidellmSetup(root), stages, src), nil
}

func guidellmStage(b obj) (summary.Stage, []string, error) {
	s := blankStage()
	filled := []string{"errors"}
	if err := guidellmLoad(b, &s); err != nil {
		return s, nil, err
	}
	m, ok, err := b.sub("metrics")
	if err != nil {
		return s, nil, err
	}
	if !ok {
		return s, nil, b.errorf("metrics", "missing")
	}
	totals, ok, err := m.sub("request_totals")
	if err != nil || !ok {
		if err == nil {
			err = m.errorf("request_totals", "missing")
		}
		return s, nil, err
	}
	var counts [4]int
	for i, k := range []string{"successful", "errored", "incomplete", "total"} {
		if counts[i], err = totals.count(k); err != nil {
			return s, nil, err
		}
		counts[i] = max(counts[i], 0)
	}
	s.OK, s.Cancelled = counts[0], counts[2]
	s.Requests = max(counts[3], counts[0]+counts[1]+counts[2])
	if counts[1] > 0 {
		s.Errors = map[record.Status]int{failed: counts[1]}
	}
	wall, err := guidellmWindow(b)
	if err != nil {
		return s, nil, err
	}
	read := func(name string, scale float64) (stats.Dist, summaryOf, error) {
		return guidellmDist(m, name, scale)
	}
	out, outSum, err := read("output_token_count", 1)
	if err != nil {
		return s, nil, err
	}
	_, inSum, err := read("prompt_token_count", 1)
	if err != nil {
		return s, nil, err
	}
	s.OutputTokens, s.PromptTokens = int(orZero(outSum.total)), int(orZero(inSum.total))
	if out.N > 0 {
		s.MeanOutputTokens = out.Mean
	}
	if !math.IsNaN(outSum.total) {
		filled = append(filled, "output_tokens")
	}
	if !math.IsNaN(inSum.total) {
		filled = append(filled, "prompt_tokens")
	}
	if !math.IsNaN(wall) && wall > 0 {
		s.WallS = wall
		s.AggregateTokS = float64(s.OutputTokens) / wall
		s.InputTokS = float64(s.PromptTokens) / wall
		s.TotalTokS = s.AggregateTokS + s.InputTokS
		s.RequestsPerS = float64(s.OK) / wall
		filled = append(filled, "wall_s", "aggregate_tok_s", "input_tok_s", "total_tok_s", "requests_per_s")
	}
	for _, f := range []struct {
		name, key string
		scale     float64
		d         *stats.Dist
	}{{"time_to_first_token_ms", "ttft_ms", 1, &s.TTFT}, {"inter_token_latency_ms", "tpot_ms", 1, &s.TPOT}, {"request_latency", "e2e_ms", 1000, &s.E2E}} {
		d, _, err := read(f.name, f.scale)
		if err != nil {
			return s, nil, err
		}
		if f.key == "tpot_ms" && d.N > 0 {
			d.N = s.OK // a per-request average, its count weighted by decode tokens
		}
		*f.d = d
		if d.N > 0 {
			filled = append(filled, f.key)
		}
	}
	if c, _, err := read("request_concurrency", 1); err != nil {
		return s, nil, err
	} else if c.N > 0 && !math.IsNaN(c.Mean) {
		s.EffectiveConcurrency = c.Mean
		filled = append(filled, "effective_concurrency")
	}
	if c, _, err := read("output_tokens_per_iteration", 1); err != nil {
		return s, nil, err
	} else if c.N > 0 && !math.IsNaN(c.Mean) {
		s.TokensPerChunk = c.Mean
		filled = append(filled, "tokens_per_chunk")
	}
	return s, blankExcept(filled...), nil
}

// guidellmLoad reads the benchmark's strategy: synchronous is one stream,
// concurrent N streams, throughput as many as it may (capped by
// max_concurrency when set), constant and Poisson a rate.
func guidellmLoad(b obj, s *summary.Stage) error {
	cfg, ok, err := b.sub("config")
	if err != nil {
		return err
	}
	if !ok {
		return b.errorf("config", "missing: the benchmark's strategy is in it")
	}
	st, ok, err := cfg.sub("strategy")
	if err != nil || !ok {
		if err == nil {
			err = cfg.errorf("strategy", "missing")
		}
		return err
	}
	kind := st.str("type_")
	if kind == "" {
		kind = st.str("type")
	}
	capN, err := st.count("max_concurrency")
	if err != nil {
		return err
	}
	switch kind {
	case "synchronous":
		s.Concurrency = 1
	case "concurrent":
		n, err := st.count("streams")
		if err != nil {
			return err
		}
		if n <= 0 {
			return st.errorf("streams", "want a count ≥ 1 for a concurrent strategy")
		}
		s.Concurrency = n
	case "throughput":
		s.Concurrency = max(capN, 0)
	case "constant", "poisson":
		rate, err := st.figure("rate")
		if err != nil {
			return err
		}
		if math.IsNaN(rate) || rate <= 0 {
			return st.errorf("rate", "want a rate > 0 for a %s strategy", kind)
		}
		s.Rate, s.Concurrency = rate, max(capN, 0)
	default:
		return st.errorf("type_", "unknown strategy %q (want synchronous, concurrent, throughput, constant or poisson)", kind)
	}
	return nil
}

// guidellmWindow is the measured window in seconds: scheduler_metrics'
// measure_end_time − measure_start_time, or (older reports) the
// benchmark's own start_time and end_time; NaN when it has neither.
func guidellmWindow(b obj) (float64, error) {
	from, to := b, b
	k0, k1 := "start_time", "end_time"
	if sm, ok, err := b.sub("scheduler_metrics"); err != nil {
		return 0, err
	} else if ok {
		from, to, k0, k1 = sm, sm, "measure_start_time", "measure_end_time"
	}
	t0, err := from.figure(k0)
	if err != nil {
		return 0, err
	}
	t1, err := to.figure(k1)
	if err != nil {
		return 0, err
	}
	if t1 < t0 {
		return 0, to.errorf(k1, "ends before it starts (%g < %g)", t1, t0)
	}
	return t1 - t0, nil
}

// summaryOf is what of a DistributionSummary is not a stats.Dist.
type summaryOf struct{ total float64 }

// guidellmDist reads metrics.<name>.successful, times scale; N = 0 when
// the metric is absent.
func guidellmDist(m obj, name string, scale float64) (stats.Dist, summaryOf, error) {
	absent := summaryOf{total: math.NaN()}
	sb, ok, err := m.sub(name)
	if err != nil || !ok {
		return none(), absent, err
	}
	ds, ok, err := sb.sub("successful")
	if err != nil || !ok {
		return none(), absent, err
	}
	n, err := ds.count("count")
	if err != nil {
		return none(), absent, err
	}
	var v [7]float64
	for i, k := range []string{"mean", "median", "max", "total_sum"} {
		if v[i], err = ds.figure(k); err != nil {
			return none(), absent, err
		}
	}
	v[4], v[5], v[6] = math.NaN(), math.NaN(), math.NaN()
	p50 := v[1]
	if pc, ok, err := ds.sub("percentiles"); err != nil {
		return none(), absent, err
	} else if ok {
		for i, k := range []string{"p90", "p99", "p95"} {
			if v[4+i], err = pc.figure(k); err != nil {
				return none(), absent, err
			}
		}
		if x, err := pc.figure("p50"); err != nil {
			return none(), absent, err
		} else if !math.IsNaN(x) {
			p50 = x
		}
	}
	if n < 0 {
		return none(), absent, ds.errorf("count", "missing")
	}
	d := dist(n, v[0]*scale, p50*scale, v[4]*scale, v[5]*scale, v[2]*scale)
	if d.N > 0 {
		d.P95 = v[6] * scale
	}
	return d, summaryOf{total: v[3]}, nil
}

// guidellmSetup reads the model and target from the report's config (or
// the args of older reports), wherever the version put them.
func guidellmSetup(root obj) record.Setup {
	su := record.Setup{Command: "guidellm benchmark"}
	for _, k := range []string{"config", "args"} {
		c, ok, _ := root.sub(k)
		if !ok {
			continue
		}
		pick := func(o obj) {
			if su.Model == "" {
				su.Model = o.str("model")
			}
			if su.URL == "" {
				su.URL = o.str("target")
			}
		}
		pick(c)
		if be, ok, _ := c.sub("backend"); ok {
			pick(be)
		}
	}
	return su
}
