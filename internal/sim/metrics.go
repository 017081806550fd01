package sim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

type histogram struct {
	mu     sync.Mutex
	bounds []float64
	counts []uint64
	sum    float64
	n      uint64
}

func newHistogram(bounds ...float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds))}
}

func (h *histogram) observe(v float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i]++
		}
	}
	h.sum += v
	h.n++
}

func (h *histogram) write(b *strings.Builder, name, help string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	for i, bound := range h.bounds {
		fmt.Fprintf(b, "%s_bucket{le=\"%s\"} %d\n", name, strconv.FormatFloat(bound, 'g', -1, 64), h.counts[i])
	}
	fmt.Fprintf(b, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %g\n%s_count %d\n", name, h.n, name, h.sum, name, h.n)
}

type histograms struct{ ttft, itl, e2e *histogram }

func newHistograms() *histograms {
	return &histograms{
		ttft: newHistogram(0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80),
		itl:  newHistogram(0.001, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1),
		e2e:  newHistogram(0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240),
	}
}

// metrics writes Prometheus text with the imitated engine's own names.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	e := s.eng
	var b strings.Builder
	metric := func(name, typ, help string, v float64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", name, help, name, typ, name, strconv.FormatFloat(v, 'g', -1, 64))
	}
	// With a leaking pool the usage is of what is left of it.
	kv := float64(e.KVUsed.Load()) / float64(max(s.p.Degrade.kvTokens(s.p.KVTokens, time.Since(e.start)), 1))
	hitRate := 0.0
	if q := e.CacheQueries.Load(); q > 0 {
		hitRate = float64(e.CacheHits.Load()) / float64(q)
	}
	switch s.p.Engine {
	case "sglang":
		metric("sglang:num_running_reqs", "gauge", "The number of running requests.", float64(e.Running.Load()))
		metric("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.", float64(e.Waiting.Load()))
		metric("sglang:token_usage", "gauge", "The token usage.", kv)
		tput := 0.0
		if ns := e.lastStepNanos.Load(); ns > 0 {
			tput = float64(e.lastStepTokens.Load()) / (float64(ns) / 1e9)
		}
		metric("sglang:gen_throughput", "gauge", "The generation throughput (token/s).", tput)
		acc := 0.0
		if d := e.SpecDrafts.Load(); d > 0 {
			acc = 1 + float64(e.SpecAccepted.Load())/float64(d)
		}
		metric("sglang:spec_accept_length", "gauge", "The average acceptance length of speculative decoding.", acc)
		metric("sglang:cache_hit_rate", "gauge", "The prefix cache hit rate.", hitRate)
		metric("sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.", float64(e.PromptTotal.Load()))
		metric("sglang:generation_tokens_total", "counter", "Number of generation tokens processed.", float64(e.GenTotal.Load()))
		s.hist.ttft.write(&b, "sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.")
		s.hist.itl.write(&b, "sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.")
		s.hist.e2e.write(&b, "sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds")
	case "llamacpp":
		metric("llamacpp:prompt_tokens_total", "counter", "Number of prompt tokens processed, excluding cached tokens", float64(e.PromptTotal.Load()))
		metric("llamacpp:tokens_predicted_total", "counter", "Number of generation tokens processed.", float64(e.GenTotal.Load()))
		metric("llamacpp:requests_processing", "gauge", "Number of requests processing.", float64(e.Running.Load()))
		metric("llamacpp:requests_deferred", "gauge", "Number of requests deferred.", float64(e.Waiting.Load()))
	case "tgi":
		metric("tgi_batch_current_size", "gauge", "Current batch size", float64(e.Running.Load()))
		metric("tgi_queue_size", "gauge", "Current queue size", float64(e.Waiting.Load()))
		metric("tgi_request_generated_tokens_total", "counter", "Generated tokens", float64(e.GenTotal.Load()))
	case "ollama":
		http.NotFound(w, r) // Ollama has no Prometheus endpoint
		return
	default: // vllm
		metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", float64(e.Running.Load()))
		metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", float64(e.Waiting.Load()))
		metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", kv)
		metric("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.", float64(e.PromptTotal.Load()))
		metric("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.", float64(e.GenTotal.Load()))
		metric("vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.", 0)
		if s.p.PrefixCache {
			metric("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.", float64(e.CacheQueries.Load()))
			metric("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.", float64(e.CacheHits.Load()))
		}
		metric("vllm:spec_decode_num_drafts_total", "counter", "Number of spec decoding drafts.", float64(e.SpecDrafts.Load()))
		metric("vllm:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.", float64(e.SpecDraftTokens.Load()))
		metric("vllm:spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.", float64(e.SpecAccepted.Load()))
		s.hist.ttft.write(&b, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.")
		s.hist.itl.write(&b, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.")
		s.hist.e2e.write(&b, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.")
	}
	// The simulator's own health, under every engine's names: figures taken
	// while late steps grew describe a starved simulator.
	l := e.Lateness()
	metric("tokperf_sim_steps_total", "counter", "Engine steps run by the simulator.", float64(l.Steps))
	metric("tokperf_sim_late_steps_total", "counter", "Simulator steps that ended more than max(2 ms, step/5) after their deadline.", float64(l.Late))
	metric("tokperf_sim_lateness_seconds_total", "counter", "Lateness summed over the late steps.", l.Total.Seconds())
	metric("tokperf_sim_lateness_seconds_max", "gauge", "The latest step's lateness.", l.Worst.Seconds())
	if rss, ok := s.p.Degrade.resident(time.Since(e.start)); ok {
		metric("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", rss)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write([]byte(b.String()))
}
