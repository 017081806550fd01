package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/stats"
)

// A small client that times requests as the Python benchmark tools do,
// so that explain can be held to their figures of the same simulator.
// Each tool's request function keeps, per request (read from their code,
// cited in METRICS.md "Why two tools disagree"):
//   - start: taken before the POST, so a new connection's setup is in it
//     (vLLM's st, GuideLLM's request_start, AIPerf's request_start_ns);
//   - each data event with choices, at its read (vLLM's ttft and itl;
//     GuideLLM's first and last iteration; AIPerf's responses);
//   - the last data event, the usage event included (vLLM's
//     most_recent_timestamp, AIPerf's last response);
//   - each data event whose first choice carries text, at its read
//     (inference-perf's chunk_times, its output_token_times without a
//     tokenizer in its config);
//   - the end of the stream (GuideLLM's request_end, inference-perf's
//     end_time);
//   - the server's usage.completion_tokens as the output length.
type peerRequest struct {
	start, lastEvent, end time.Time
	events                []time.Time // data events with choices
	texts                 []time.Time // data events whose first choice has text
	output, prompt        int
	ok                    bool
}

// peerRun sends prompts to url's /v1/completions, request i at offset
// at[i] from the run's start, each on its own (an open loop, as vLLM's
// --request-rate), and returns the requests and the run's start and end
// (vLLM's benchmark_start_time and the end of its gather).
func peerRun(t *testing.T, c *http.Client, url string, prompts []string, at []time.Duration, maxTokens int) (time.Time, time.Time, []peerRequest) {
	t.Helper()
	out := make([]peerRequest, len(prompts))
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range prompts {
		time.Sleep(time.Until(begin.Add(at[i])))
		wg.Go(func() { out[i] = peerOne(c, url, prompts[i], maxTokens) })
	}
	wg.Wait()
	return begin, time.Now(), out
}

// peerClosed sends the prompts at most conc at a time, as vLLM's
// --max-concurrency (a semaphore; each request's clock starts once it
// holds a slot): the first warmups of them before the benchmark's start,
// left out as --num-warmups leaves them out, then the rest.
func peerClosed(c *http.Client, url string, prompts []string, conc, warmups, maxTokens int) (time.Time, time.Time, []peerRequest) {
	sem := make(chan struct{}, conc)
	run := func(ps []string) []peerRequest {
		out := make([]peerRequest, len(ps))
		var wg sync.WaitGroup
		for i := range ps {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				out[i] = peerOne(c, url, ps[i], maxTokens)
			})
		}
		wg.Wait()
		return out
	}
	run(prompts[:warmups])
	begin := time.Now()
	reqs := run(prompts[warmups:])
	return begin, time.Now(), reqs
}

func peerOne(c *http.Client, url, prompt string, maxTokens int) peerRequest {
	body, _ := json.Marshal(map[string]any{"model": "peer", "prompt": prompt, "max_tokens": maxTokens, "stream": true,
		"ignore_eos": true, "stream_options": map[string]any{"include_usage": true}})
	var p peerRequest
	p.start = time.Now()
	resp, err := c.Post(url+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return p
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		now := time.Now()
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok && data != "[DONE]" {
			var ev struct {
				Choices []struct {
					Text string `json:"text"`
				}
				Usage *struct {
					Prompt     int `json:"prompt_tokens"`
					Completion int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if json.Unmarshal([]byte(data), &ev) == nil {
				if len(ev.Choices) > 0 {
					p.events = append(p.events, now)
					if ev.Choices[0].Text != "" {
						p.texts = append(p.texts, now)
					}
				} else if ev.Usage != nil {
					p.output, p.prompt = ev.Usage.Completion, ev.Usage.Prompt
				}
				p.lastEvent = now
			}
		}
		if err != nil {
			break
		}
	}
	p.end = time.Now()
	p.ok = resp.StatusCode == http.StatusOK && len(p.events) > 0 && p.output > 0
	return p
}

// peerLoad is an open loop at rate, or a closed loop of conc.
type peerLoad struct {
	rate float64
	conc int
}

func (l peerLoad) vllmRate() any {
	if l.rate > 0 {
		return l.rate
	}
	return "inf"
}

func (l peerLoad) vllmConc() any {
	if l.conc > 0 {
		return l.conc
	}
	return nil
}

func (l peerLoad) guidellm() map[string]any {
	if l.rate > 0 {
		return map[string]any{"type_": "poisson", "rate": l.rate}
	}
	return map[string]any{"type_": "concurrent", "streams": l.conc}
}

func (l peerLoad) aiperf() map[string]any {
	if l.rate > 0 {
		return map[string]any{"request_rate": l.rate}
	}
	return map[string]any{"concurrency": l.conc}
}

func sec(d time.Duration) float64 { return d.Seconds() }

// numpyStats are mean, median and p99 as numpy computes them
// (np.mean, np.median, np.percentile: linear between ranks), in ms.
func numpyStats(xs []float64) (mean, median, p99 float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	return 1e3 * sum / float64(len(s)), 1e3 * stats.Linear(s, 50), 1e3 * stats.Linear(s, 99)
}

// writeVLLM writes what vLLM's calculate_metrics makes of the requests
// (vllm/benchmarks/serve.py): TTFT at the first choices event, ITL the
// gaps between choices events pooled, latency to the last data event,
// TPOT = (latency − ttft)/(output_len − 1), output_len the server's
// usage, numpy's statistics, throughputs over the benchmark's duration.
func writeVLLM(t *testing.T, path string, begin, end time.Time, reqs []peerRequest, l peerLoad) {
	var ttfts, itls, tpots, lats []float64
	var lens []int
	var perItl [][]float64
	completed, total, input := 0, 0, 0
	for _, r := range reqs {
		if !r.ok {
			lens = append(lens, 0)
			perItl = append(perItl, nil)
			continue
		}
		completed++
		total += r.output
		input += r.prompt
		ttft, lat := sec(r.events[0].Sub(r.start)), sec(r.lastEvent.Sub(r.start))
		var gaps []float64
		for i := 1; i < len(r.events); i++ {
			gaps = append(gaps, sec(r.events[i].Sub(r.events[i-1])))
		}
		itls = append(itls, gaps...)
		perItl = append(perItl, gaps)
		if r.output > 1 {
			tpots = append(tpots, (lat-ttft)/float64(r.output-1))
		}
		ttfts, lats, lens = append(ttfts, ttft), append(lats, lat), append(lens, r.output)
	}
	dur := sec(end.Sub(begin))
	m := map[string]any{"date": "20261202-080000", "endpoint_type": "openai", "backend": "openai", "model_id": "peer", "tokenizer_id": "peer",
		"num_prompts": len(reqs), "request_rate": l.vllmRate(), "burstiness": 1.0, "max_concurrency": l.vllmConc(), "duration": dur,
		"completed": completed, "failed": len(reqs) - completed, "total_input_tokens": input, "total_output_tokens": total,
		"request_throughput": float64(completed) / dur, "output_throughput": float64(total) / dur,
		"output_lens": lens, "ttfts": ttfts, "itls": perItl, "latencies": lats}
	for name, xs := range map[string][]float64{"ttft": ttfts, "tpot": tpots, "itl": itls, "e2el": lats} {
		mean, med, p99 := numpyStats(xs)
		m["mean_"+name+"_ms"], m["median_"+name+"_ms"], m["p99_"+name+"_ms"] = mean, med, p99
	}
	writeJSON(t, path, m)
}

// writeSGLang writes what SGLang's bench_serving makes of the requests
// (python/sglang/bench_serving.py, shaped as vLLM's): TTFT and the chunk
// gaps as vLLM's, but the latency taken when the stream has ended; the
// server's output counts, numpy's statistics, one JSON line.
func writeSGLang(t *testing.T, path string, begin, end time.Time, reqs []peerRequest, l peerLoad) {
	var ttfts, itls, tpots, lats []float64
	completed, total, input := 0, 0, 0
	for _, r := range reqs {
		if !r.ok {
			continue
		}
		completed++
		total += r.output
		input += r.prompt
		ttft, lat := sec(r.events[0].Sub(r.start)), sec(r.end.Sub(r.start))
		for i := 1; i < len(r.events); i++ {
			itls = append(itls, sec(r.events[i].Sub(r.events[i-1])))
		}
		if r.output > 1 {
			tpots = append(tpots, (lat-ttft)/float64(r.output-1))
		}
		ttfts, lats = append(ttfts, ttft), append(lats, lat)
	}
	dur := sec(end.Sub(begin))
	m := map[string]any{"backend": "sglang-oai", "request_rate": l.vllmRate(), "max_concurrency": l.vllmConc(), "duration": dur,
		"completed": completed, "total_input_tokens": input, "total_output_tokens": total, "total_output_tokens_retokenized": total,
		"request_throughput": float64(completed) / dur, "output_throughput": float64(total) / dur}
	for name, xs := range map[string][]float64{"ttft": ttfts, "tpot": tpots, "itl": itls, "e2e_latency": lats} {
		mean, med, p99 := numpyStats(xs)
		m["mean_"+name+"_ms"], m["median_"+name+"_ms"], m["p99_"+name+"_ms"] = mean, med, p99
	}
	writeJSON(t, path, m)
}

// guidellmDist is GuideLLM's DistributionSummary.from_values
// (guidellm/utils/statistics.py): the weights normalized into a PDF
// over the sorted values, the mean weighted, each percentile the first
// value whose cumulative probability reaches it.
func guidellmDist(xs, ws []float64) map[string]any {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmpFloat(xs[a], xs[b]) })
	total, mean, sum := 0.0, 0.0, 0.0
	for i := range xs {
		total += ws[i]
		sum += xs[i]
	}
	for i := range xs {
		mean += xs[i] * ws[i] / total
	}
	at := func(p float64) float64 {
		c := 0.0
		for _, i := range idx {
			if c += ws[i] / total; c >= p {
				return xs[i]
			}
		}
		return xs[idx[len(idx)-1]]
	}
	return map[string]any{"successful": map[string]any{"mean": mean, "median": at(0.5), "max": xs[idx[len(idx)-1]], "count": len(xs), "total_sum": sum,
		"percentiles": map[string]any{"p50": at(0.5), "p90": at(0.9), "p95": at(0.95), "p99": at(0.99)}}}
}

// writeGuideLLM writes what GuideLLM makes of the requests
// (guidellm/benchmark/schemas: time_to_first_token_ms from the request's
// start to its first iteration, inter_token_latency_ms = (last − first
// iteration)/(output_tokens − 1) weighted by output_tokens − 1,
// request_latency from start to end in seconds), the measured window
// from the first request's start to the last one's end.
func writeGuideLLM(t *testing.T, path string, reqs []peerRequest, l peerLoad) {
	var ttft, itl, itlW, lat, out, prompt, ones []float64
	first, last := time.Time{}, time.Time{}
	ok := 0
	for _, r := range reqs {
		if !r.ok {
			continue
		}
		ok++
		if first.IsZero() || r.start.Before(first) {
			first = r.start
		}
		if r.end.After(last) {
			last = r.end
		}
		ttft = append(ttft, 1e3*sec(r.events[0].Sub(r.start)))
		if r.output > 1 {
			itl = append(itl, 1e3*sec(r.events[len(r.events)-1].Sub(r.events[0]))/float64(r.output-1))
			itlW = append(itlW, float64(r.output-1))
		}
		lat = append(lat, sec(r.end.Sub(r.start)))
		out, prompt, ones = append(out, float64(r.output)), append(prompt, float64(r.prompt)), append(ones, 1)
	}
	bench := map[string]any{
		"config":            map[string]any{"strategy": l.guidellm()},
		"scheduler_metrics": map[string]any{"measure_start_time": float64(first.UnixNano()) / 1e9, "measure_end_time": float64(last.UnixNano()) / 1e9},
		"metrics": map[string]any{
			"request_totals":         map[string]any{"successful": ok, "errored": len(reqs) - ok, "incomplete": 0, "total": len(reqs)},
			"time_to_first_token_ms": guidellmDist(ttft, ones), "inter_token_latency_ms": guidellmDist(itl, itlW),
			"request_latency": guidellmDist(lat, ones), "output_token_count": guidellmDist(out, ones), "prompt_token_count": guidellmDist(prompt, ones),
		},
	}
	writeJSON(t, path, map[string]any{"metadata": map[string]any{}, "config": map[string]any{"model": "peer"}, "benchmarks": []any{bench}})
}

// writeAIPerf writes what AIPerf makes of the requests (its metrics:
// time_to_first_token to the first response, request_latency to the
// last, inter_token_latency = (request_latency − ttft)/(osl − 1) one a
// request, output_token_throughput = total osl / benchmark_duration from
// the first request's start to the last response), numpy's statistics.
// It counts output tokens by the server's usage, as with
// --use-server-token-count.
func writeAIPerf(t *testing.T, path string, reqs []peerRequest, l peerLoad) {
	var ttft, itl, lat []float64
	first, last := time.Time{}, time.Time{}
	osl, isl, ok := 0, 0, 0
	for _, r := range reqs {
		if !r.ok {
			continue
		}
		ok++
		osl += r.output
		isl += r.prompt
		if first.IsZero() || r.start.Before(first) {
			first = r.start
		}
		if r.lastEvent.After(last) {
			last = r.lastEvent
		}
		tt, l := sec(r.events[0].Sub(r.start)), sec(r.lastEvent.Sub(r.start))
		ttft, lat = append(ttft, tt), append(lat, l)
		if r.output > 1 {
			itl = append(itl, (l-tt)/float64(r.output-1))
		}
	}
	metric := func(xs []float64) map[string]any {
		mean, med, p99 := numpyStats(xs)
		return map[string]any{"unit": "ms", "avg": mean, "p50": med, "p99": p99}
	}
	dur := sec(last.Sub(first))
	writeJSON(t, path, map[string]any{
		"request_count": map[string]any{"unit": "requests", "avg": ok}, "error_request_count": map[string]any{"unit": "requests", "avg": len(reqs) - ok},
		"benchmark_duration": map[string]any{"unit": "sec", "avg": dur}, "total_osl": map[string]any{"unit": "tokens", "avg": osl},
		"total_isl":               map[string]any{"unit": "tokens", "avg": isl},
		"output_token_throughput": map[string]any{"unit": "tokens/sec", "avg": float64(osl) / dur},
		"request_throughput":      map[string]any{"unit": "requests/sec", "avg": float64(ok) / dur},
		"time_to_first_token":     metric(ttft), "inter_token_latency": metric(itl), "request_latency": metric(lat),
		"input_config": map[string]any{"endpoint": map[string]any{"model_names": []string{"peer"}, "type": "completions", "streaming": true},
			"loadgen": l.aiperf()},
	})
}

// writeInferencePerf writes the stage's lifecycle report as
// inference-perf's summarize_requests makes it (reportgen/base.py; its
// config naming no tokenizer, so output_token_times are the text chunks'
// arrivals): request_latency = end − start; time_to_first_token = first
// text chunk − start and time_per_output_token = (last − first text chunk)
// / (output tokens − 1), both only for a request of two chunks or more;
// inter_token_latency the gaps between text chunks, pooled; the rates over
// the last end − the first start; numpy's statistics, in seconds. It counts
// output tokens by the server's usage, as with use_server_output_tokens.
func writeInferencePerf(t *testing.T, path string, reqs []peerRequest, l peerLoad) {
	var ttft, tpot, itl, lat []float64
	first, last := time.Time{}, time.Time{}
	osl, isl, ok := 0, 0, 0
	for _, r := range reqs {
		if first.IsZero() || r.start.Before(first) {
			first = r.start
		}
		if r.end.After(last) {
			last = r.end
		}
		if !r.ok {
			continue
		}
		ok++
		osl, isl = osl+r.output, isl+r.prompt
		lat = append(lat, sec(r.end.Sub(r.start)))
		if len(r.texts) < 2 {
			continue
		}
		ttft = append(ttft, sec(r.texts[0].Sub(r.start)))
		if r.output > 1 {
			tpot = append(tpot, sec(r.texts[len(r.texts)-1].Sub(r.texts[0]))/float64(r.output-1))
		}
		for i := 1; i < len(r.texts); i++ {
			itl = append(itl, sec(r.texts[i].Sub(r.texts[i-1])))
		}
	}
	summary := func(xs []float64) map[string]any {
		mean, med, p99 := numpyStats(xs)
		return map[string]any{"mean": mean / 1000, "median": med / 1000, "p99": p99 / 1000}
	}
	dur := sec(last.Sub(first))
	load := map[string]any{"count": len(reqs), "requested_rate": l.rate}
	if l.conc > 0 {
		load["concurrency"] = l.conc
	}
	writeJSON(t, path, map[string]any{
		"benchmark_time_seconds": dur, "load_summary": load,
		"successes": map[string]any{"count": ok,
			"latency": map[string]any{"request_latency": summary(lat), "time_to_first_token": summary(ttft),
				"time_per_output_token": summary(tpot), "inter_token_latency": summary(itl)},
			"throughput": map[string]any{"output_tokens_per_sec": float64(osl) / dur, "requests_per_sec": float64(ok) / dur,
				"input_tokens_per_sec": float64(isl) / dur},
			"prompt_tokens": map[string]any{"total": isl}, "output_tokens": map[string]any{"total": osl}},
		"failures": map[string]any{"count": len(reqs) - ok},
	})
}

// writeJSON writes v as one line, as Python's json.dump does.
func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
