package sim

import (
	"net/http"
	"time"
)

// vLLM: the OpenAI routes (openai.go) with "logprobs": null, /version,
// /tokenize and /detokenize ("prompt"), and its metrics.

func init() {
	imitate("vllm", imitation{
		own: func(s *Server, m *http.ServeMux) {
			m.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, map[string]any{"version": s.version("0.11.0")})
			})
			s.tokenizeRoutes(m, "prompt")
			m.HandleFunc("GET /openapi.json", s.openAPI)
		},
		metrics: func(s *Server, x *exposition) {
			x.metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", float64(s.eng.Running.Load()))
			x.metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", float64(s.eng.Waiting.Load()))
			x.metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", x.kv)
			x.metric("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", float64(s.eng.PromptTotal.Load()))
			x.metric("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", float64(s.eng.GenTotal.Load()))
			x.metric("vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.", 0)
			if s.p.PrefixCache {
				x.metric("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.", float64(s.eng.CacheQueries.Load()))
				x.metric("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.", float64(s.eng.CacheHits.Load()))
			}
			x.metric("vllm:spec_decode_num_drafts_total", "counter", "Number of spec decoding drafts.", float64(s.eng.SpecDrafts.Load()))
			x.metric("vllm:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.", float64(s.eng.SpecDraftTokens.Load()))
			x.metric("vllm:spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.", float64(s.eng.SpecAccepted.Load()))
			s.hist.ttft.write(&x.b, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.")
			s.hist.itl.write(&x.b, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.")
			s.hist.e2e.write(&x.b, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.")
		},
		nullLogprobs: true,
		stopReason:   true,
	})
}

// vllmMetrics are vLLM's per-request timings (--enable-per-request-metrics,
// include_metrics): queue_time_ms from arrival to admission, the rest as
// vLLM's Prometheus histograms time them (TTFT from arrival, generation
// from the first token to the last).
func vllmMetrics(x *exchange, ev Event) map[string]float64 {
	msOf := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
	_, gen := x.engineTimes()
	m := map[string]float64{"queue_time_ms": msOf(x.admitted.Sub(x.arrived)), "time_to_first_token_ms": msOf(x.firstAt.Sub(x.arrived)), "generation_time_ms": msOf(gen)}
	if n := ev.Total - 1; n > 0 && gen > 0 {
		m["mean_itl_ms"], m["tokens_per_second"] = msOf(gen)/float64(n), float64(n)/gen.Seconds()
	}
	return m
}
