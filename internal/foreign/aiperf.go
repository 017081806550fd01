package foreign

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// NVIDIA AIPerf writes profile_export_aiperf.json, one object with each
// metric's summary ({unit, avg, p50, p90, p99, min, max, std}) and the
// user's config, and profile_export.jsonl, one record per request
// ({metadata: {request_start_ns, request_end_ns, …}, metrics: {tag: {value,
// unit}}, error}). Either is one stage here.

var aiperfDefinitions = []string{
	"TTFT is AIPerf's time_to_first_token: from the request's start to its first response carrying output (tokperf's TTFT)",
	"TPOT is AIPerf's inter_token_latency: (request latency − TTFT) / (output tokens − 1) per request, the first token excluded; that is tokperf's TPOT, not a per-gap ITL, so tokperf's ITL is blank",
	"ICL is AIPerf's inter_chunk_latency: the gaps between streamed responses (per chunk, tokperf's ICL)",
	"decode tok/s is AIPerf's output_token_throughput_per_user (1 / its inter_token_latency, tokperf's decode tok/s); E2E is its request_latency, to the final response",
}

// aiperfTime converts a time in unit to milliseconds (to seconds when
// seconds is true).
func aiperfTime(v float64, unit string, seconds bool) (float64, bool) {
	scale := map[string]float64{"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1, "s": 1e3, "sec": 1e3, "seconds": 1e3}
	f, ok := scale[strings.ToLower(unit)]
	if seconds {
		f /= 1e3
	}
	return v * f, ok
}

// aiperfMetric is the summary of metric tag in o: a Dist of n samples,
// times converted to ms (s when seconds), NaN where the file has none.
func aiperfMetric(o obj, tag string, n int, time, seconds bool) (stats.Dist, error) {
	m, ok, err := o.sub(tag)
	if err != nil || !ok {
		return none(), err
	}
	var v [5]float64
	for i, k := range []string{"avg", "p50", "p90", "p99", "max"} {
		if v[i], err = m.figure(k); err != nil {
			return none(), err
		}
		if time {
			var known bool
			if v[i], known = aiperfTime(v[i], m.str("unit"), seconds); !known {
				return none(), m.errorf("unit", "unknown time unit %q", m.str("unit"))
			}
		}
	}
	return dist(n, v[0], v[1], v[2], v[3], v[4]), nil
}

func aiperfRun(root obj) (*analyze.Run, error) {
	s := blankStage()
	avg := func(tag string, time, seconds bool) (float64, error) {
		d, err := aiperfMetric(root, tag, 1, time, seconds)
		if d.N == 0 {
			return math.NaN(), err
		}
		return d.Mean, err
	}
	var v [7]float64
	var err error
	for i, t := range []struct {
		tag           string
		time, seconds bool
	}{{"request_count", false, false}, {"error_request_count", false, false}, {"benchmark_duration", true, true}, {"total_osl", false, false},
		{"total_isl", false, false}, {"output_token_throughput", false, false}, {"request_throughput", false, false}} {
		if v[i], err = avg(t.tag, t.time, t.seconds); err != nil {
			return nil, err
		}
	}
	if math.IsNaN(v[0]) {
		return nil, root.errorf("request_count", "missing: every AIPerf summary has it")
	}
	filled := []string{"errors"}
	s.OK = int(v[0])
	s.Requests = s.OK + int(orZero(v[1]))
	if n := int(orZero(v[1])); n > 0 {
		s.Errors = map[record.Status]int{failed: n}
	}
	for _, f := range []struct {
		v    float64
		key  string
		into *float64
	}{{v[2], "wall_s", &s.WallS}, {v[5], "aggregate_tok_s", &s.AggregateTokS}, {v[6], "requests_per_s", &s.RequestsPerS}} {
		if !math.IsNaN(f.v) {
			*f.into = f.v
			filled = append(filled, f.key)
		}
	}
	if !math.IsNaN(v[3]) {
		s.OutputTokens = int(v[3])
		s.MeanOutputTokens = v[3] / max(v[0], 1)
		filled = append(filled, "output_tokens")
	}
	if !math.IsNaN(v[4]) {
		s.PromptTokens = int(v[4])
		filled = append(filled, "prompt_tokens")
		if s.WallS > 0 {
			s.InputTokS = v[4] / s.WallS
			s.TotalTokS = s.InputTokS + s.AggregateTokS
			filled = append(filled, "input_tok_s", "total_tok_s")
		}
	}
	if g, err := avg("goodput", false, false); err != nil {
		return nil, err
	} else if !math.IsNaN(g) {
		s.GoodputRequestsPerS = g
		filled = append(filled, "goodput_requests_per_s")
	}
	for _, f := range []struct {
		tag, key string
		time     bool
		d        *stats.Dist
	}{{"time_to_first_token", "ttft_ms", true, &s.TTFT}, {"inter_token_latency", "tpot_ms", true, &s.TPOT}, {"inter_chunk_latency", "icl_ms", true, &s.ICL},
		{"request_latency", "e2e_ms", true, &s.E2E}, {"output_token_throughput_per_user", "decode_tok_s", false, &s.DecodeTokS}} {
		d, err := aiperfMetric(root, f.tag, s.OK, f.time, false)
		if err != nil {
			return nil, err
		}
		*f.d = d
		if d.N > 0 {
			filled = append(filled, f.key)
		}
	}
	su := record.Setup{Command: "aiperf profile"}
	if cfg, ok, err := root.sub("input_config"); err != nil {
		return nil, err
	} else if ok {
		if err := aiperfConfig(cfg, &su, &s); err != nil {
			return nil, err
		}
	}
	src := &analyze.Source{Tool: AIPerf, Format: "AIPerf profile_export_aiperf.json", Blank: blankExcept(filled...), Definitions: append(aiperfDefinitions,
		"aggregate is AIPerf's output_token_throughput (output tokens / benchmark_duration, from the first request to the last response: tokperf's aggregate); its summaries give no sample counts, so n is the requests")}
	return analyze.ForeignRun(root.d.file, su, []summary.Stage{s}, src), nil
}

// aiperfConfig reads the model, endpoint and load from AIPerf's input_config.
func aiperfConfig(cfg obj, su *record.Setup, s *summary.Stage) error {
	if ep, ok, err := cfg.sub("endpoint"); err != nil {
		return err
	} else if ok {
		var models []string
		if raw, there := ep.m["model_names"]; there && present(raw) {
			if json.Unmarshal(raw, &models) != nil {
				return ep.errorf("model_names", "want a list of names")
			}
		}
		if len(models) > 0 {
			su.Model = models[0]
		}
		su.URL = ep.str("url")
		su.Endpoint = ep.str("type")
	}
	lg, ok, err := cfg.sub("loadgen")
	if err != nil || !ok {
		return err
	}
	c, err := lg.count("concurrency")
	if err != nil {
		return err
	}
	rate, err := lg.figure("request_rate")
	if err != nil {
		return err
	}
	if c > 0 {
		s.Concurrency = c
		su.Load.Concurrency = []int{c}
	}
	if !math.IsNaN(rate) && rate > 0 {
		s.Rate, su.Load.Rate = rate, rate
	}
	return nil
}

// aiperfRecord is one line of profile_export.jsonl, as far as it is read.
type aiperfRecord struct {
	Metadata struct {
		Start  *int64 `json:"request_start_ns"`
		End    *int64 `json:"request_end_ns"`
		Phase  string `json:"benchmark_phase"`
		Cancel bool   `json:"was_cancelled"`
	} `json:"metadata"`
	Metrics map[string]struct {
		Value json.RawMessage `json:"value"`
		Unit  string          `json:"unit"`
	} `json:"metrics"`
	Error *struct {
		Code int    `json:"code"`
		Type string `json:"type"`
	} `json:"error"`
}

// aiperfRecords folds per-request records into a stage's figures, exactly
// as docs/METRICS.md defines them over the values AIPerf recorded.
type aiperfRecords struct {
	s                         summary.Stage
	first, last               int64
	busy                      float64 // Σ (end − start), s
	chunks                    int
	ttft, e2e, tpot, dec, rtk []float64
	icl                       []float64
	pairs                     [][2]float64 // output tokens, latency (s): compare's samples
}

func readAIPerfRecords(r *bufio.Reader, name string) (*analyze.Run, error) {
	a := &aiperfRecords{s: blankStage(), first: math.MaxInt64, last: math.MinInt64}
	err := lines(r, name, func(line []byte, n int) error {
		d := &doc{file: name, data: pythonLiterals(line), line: n}
		var rec aiperfRecord
		if err := json.Unmarshal(d.data, &rec); err != nil {
			return d.syntax(err)
		}
		return a.add(d, &rec)
	})
	if err != nil {
		return nil, err
	}
	if a.s.Requests == 0 {
		return nil, fmt.Errorf("%s:1: no profiling records in the file", name)
	}
	// compare's samples, taken before stage() sorts the lists it describes
	x := &analyze.Samples{Pairs: a.pairs, TTFT: append([]float64(nil), a.ttft...), Decode: append([]float64(nil), a.dec...)}
	s := a.stage()
	filled := []string{"wall_s", "output_tokens", "prompt_tokens", "aggregate_tok_s", "input_tok_s", "total_tok_s", "requests_per_s",
		"effective_concurrency", "tokens_per_chunk", "errors", "ttft_ms", "e2e_ms", "tpot_ms", "decode_tok_s", "request_tok_s", "icl_ms"}
	src := &analyze.Source{Tool: AIPerf, Format: "AIPerf profile_export.jsonl (per request)", Blank: blankExcept(filled...), Definitions: append(aiperfDefinitions,
		"the stage's figures are computed by tokperf from AIPerf's per-request values as docs/METRICS.md defines them: wall from the first request_start_ns to the last request_end_ns, nearest-rank percentiles, request tok/s = output tokens / request latency, tokens per chunk = output tokens / (inter-chunk gaps + 1)")}
	return analyze.ForeignRunSamples(name, record.Setup{Command: "aiperf profile"}, []summary.Stage{s}, []*analyze.Samples{x}, src), nil
}

// value is metric tag of a record as one number (times in ms), ok false
// when the record does not have it.
func (a *aiperfRecords) value(d *doc, rec *aiperfRecord, tag string, time bool) (float64, bool, error) {
	m, there := rec.Metrics[tag]
	if !there || !present(m.Value) {
		return 0, false, nil
	}
	var v float64
	bad := func() error {
		return fmt.Errorf("%s:%d: metrics.%s.value: want a number ≥ 0 in a known unit, got %s %q", d.file, d.line, tag, short(m.Value), m.Unit)
	}
	if json.Unmarshal(m.Value, &v) != nil || v < 0 || math.IsInf(v, 0) {
		return 0, false, bad()
	}
	if time {
		var known bool
		if v, known = aiperfTime(v, m.Unit, false); !known {
			return 0, false, bad()
		}
	}
	return v, true, nil
}

func (a *aiperfRecords) add(d *doc, rec *aiperfRecord) error {
	if p := rec.Metadata.Phase; p != "" && p != "profiling" {
		return nil // warm-up
	}
	md := rec.Metadata
	if md.Start == nil || md.End == nil {
		return fmt.Errorf("%s:%d: metadata.request_start_ns: a record needs its start and end times", d.file, d.line)
	}
	if *md.End < *md.Start {
		return fmt.Errorf("%s:%d: metadata.request_end_ns: ends before it starts", d.file, d.line)
	}
	a.s.Requests++
	a.first, a.last = min(a.first, *md.Start), max(a.last, *md.End)
	switch {
	case md.Cancel:
		a.s.Cancelled++
		return nil
	case rec.Error != nil:
		kind := record.Status(rec.Error.Type)
		if kind == "" {
			kind = failed
		}
		if a.s.Errors == nil {
			a.s.Errors = map[record.Status]int{}
		}
		a.s.Errors[kind]++
		return nil
	}
	a.s.OK++
	a.busy += float64(*md.End-*md.Start) / 1e9
	osl, _, err := a.value(d, rec, "output_sequence_length", false)
	if err != nil {
		return err
	}
	isl, _, err := a.value(d, rec, "input_sequence_length", false)
	if err != nil {
		return err
	}
	a.s.OutputTokens += int(osl)
	a.s.PromptTokens += int(isl)
	for _, f := range []struct {
		tag  string
		time bool
		into *[]float64
	}{{"time_to_first_token", true, &a.ttft}, {"request_latency", true, &a.e2e}, {"inter_token_latency", true, &a.tpot}, {"output_token_throughput_per_user", false, &a.dec}} {
		v, ok, err := a.value(d, rec, f.tag, f.time)
		if err != nil {
			return err
		}
		if ok {
			*f.into = append(*f.into, v)
			if f.tag == "request_latency" && v > 0 {
				a.rtk = append(a.rtk, osl/(v/1e3))
				a.pairs = append(a.pairs, [2]float64{osl, v / 1e3})
			}
		}
	}
	if m, ok := rec.Metrics["inter_chunk_latency"]; ok && present(m.Value) {
		var gaps []float64
		if json.Unmarshal(m.Value, &gaps) != nil {
			return fmt.Errorf("%s:%d: metrics.inter_chunk_latency.value: want a list of numbers, got %s", d.file, d.line, short(m.Value))
		}
		for _, g := range gaps {
			v, known := aiperfTime(g, m.Unit, false)
			if !known || g < 0 {
				return fmt.Errorf("%s:%d: metrics.inter_chunk_latency: want gaps ≥ 0 in a known unit, got %g %q", d.file, d.line, g, m.Unit)
			}
			a.icl = append(a.icl, v)
		}
		a.chunks += len(gaps) + 1
	} else if osl > 0 {
		a.chunks++ // one response: not streamed
	}
	return nil
}

func (a *aiperfRecords) stage() summary.Stage {
	s := a.s
	s.WallS = float64(a.last-a.first) / 1e9
	if s.WallS > 0 {
		s.AggregateTokS = float64(s.OutputTokens) / s.WallS
		s.InputTokS = float64(s.PromptTokens) / s.WallS
		s.TotalTokS = s.AggregateTokS + s.InputTokS
		s.RequestsPerS = float64(s.OK) / s.WallS
		s.EffectiveConcurrency = a.busy / s.WallS
	}
	if a.chunks > 0 {
		s.TokensPerChunk = float64(s.OutputTokens) / float64(a.chunks)
	}
	if s.OK > 0 {
		s.MeanOutputTokens = float64(s.OutputTokens) / float64(s.OK)
	}
	describe := func(xs []float64) stats.Dist {
		if len(xs) == 0 {
			return none()
		}
		return stats.Describe(xs)
	}
	s.TTFT, s.E2E, s.TPOT, s.DecodeTokS, s.RequestTokS, s.ICL = describe(a.ttft), describe(a.e2e), describe(a.tpot), describe(a.dec), describe(a.rtk), describe(a.icl)
	return s
}
