package sim

import (
	"fmt"
	"net/http"
	"time"
)

// SGLang: /generate (TGI's by body too), its identity routes, /health_generate
// and its metrics.

func init() {
	imitate("sglang", imitation{
		serve: func(s *Server, m *http.ServeMux) {
			m.HandleFunc("POST /generate", s.generateRoute) // SGLang, or TGI by body
		},
		own: func(s *Server, m *http.ServeMux) {
			m.HandleFunc("GET /health_generate", s.healthGenerate)
			m.HandleFunc("GET /get_model_info", s.sglangModelInfo)
			m.HandleFunc("GET /server_info", s.sglangServerInfo)
			m.HandleFunc("GET /openapi.json", s.openAPI)
		},
		metrics:      sglangMetrics,
		nullLogprobs: true,
	})
}

// sglangMetrics are SGLang's gauges, counters and histograms.
func sglangMetrics(s *Server, x *exposition) {
	x.metric("sglang:num_running_reqs", "gauge", "The number of running requests.", float64(s.eng.Running.Load()))
	x.metric("sglang:num_queue_reqs", "gauge", "The number of requests in the waiting queue.", float64(s.eng.Waiting.Load()))
	x.metric("sglang:token_usage", "gauge", "The token usage.", x.kv)
	tput := 0.0
	if ns := s.eng.lastStepNanos.Load(); ns > 0 {
		tput = float64(s.eng.lastStepTokens.Load()) / (float64(ns) / 1e9)
	}
	x.metric("sglang:gen_throughput", "gauge", "The generation throughput (token/s).", tput)
	acc := 0.0
	if d := s.eng.SpecDrafts.Load(); d > 0 {
		acc = 1 + float64(s.eng.SpecAccepted.Load())/float64(d)
	}
	x.metric("sglang:spec_accept_length", "gauge", "The average acceptance length of speculative decoding.", acc)
	x.metric("sglang:cache_hit_rate", "gauge", "The prefix cache hit rate.", x.hitRate)
	x.metric("sglang:prompt_tokens_total", "counter", "Number of prefill tokens processed.", float64(s.eng.PromptTotal.Load()))
	x.metric("sglang:generation_tokens_total", "counter", "Number of generation tokens processed.", float64(s.eng.GenTotal.Load()))
	s.hist.ttft.write(&x.b, "sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.")
	s.hist.itl.write(&x.b, "sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.")
	s.hist.e2e.write(&x.b, "sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds")
}

func (s *Server) generateRoute(w http.ResponseWriter, r *http.Request) {
	var req nativeRequest
	if err := decodeBody(r, &req); err != nil {
		nativeError(w, 400, err.Error())
		return
	}
	if req.Inputs != nil {
		s.tgi(w, r, &req, false)
		return
	}
	g := &gen{route: "/generate", stream: req.Stream, temperature: 1, maxTokens: 128}
	switch {
	case len(req.InputIDs) > 0:
		g.prompt, g.promptTokens, g.ids = fmt.Sprint(req.InputIDs), len(req.InputIDs), req.InputIDs
	case len(req.Text) > 0:
		if err := s.parsePrompt(g, req.Text); err != nil {
			nativeError(w, 400, "text: "+err.Error())
			return
		}
	default:
		nativeError(w, 400, "Either text or input_ids should be provided.")
		return
	}
	sp := req.SamplingParams
	if sp.MaxNewTokens != nil {
		g.maxTokens = *sp.MaxNewTokens
	}
	if sp.Temperature != nil {
		g.temperature = *sp.Temperature
	}
	g.ignoreEOS, g.minTokens = sp.IgnoreEOS, sp.MinNewTokens
	s.serve(w, r, g, &sglangFormat{s: s})
}

type sglangMeta struct {
	ID            string `json:"id"`
	FinishReason  any    `json:"finish_reason"`
	PromptTokens  int    `json:"prompt_tokens"`
	WeightVersion string `json:"weight_version"`
	// ReasoningTokens are the output tokens of the reasoning channel (0
	// for a model without one), as SGLang 0.5's meta_info says.
	ReasoningTokens  int      `json:"reasoning_tokens"`
	CompletionTokens int      `json:"completion_tokens"`
	CachedTokens     int      `json:"cached_tokens"`
	E2ELatency       *float64 `json:"e2e_latency,omitempty"`
	InferenceTime    *float64 `json:"inference_time,omitempty"` // Wire.RequestTimes
	SpecVerifyCt     *int     `json:"spec_verify_ct,omitempty"`
	SpecAcceptLength *float64 `json:"spec_accept_length,omitempty"`
}

// sglangEvent is /generate's answer, or one event of its stream: the
// text and token ids so far, and meta_info.
type sglangEvent struct {
	Text      string     `json:"text"`
	OutputIDs []int      `json:"output_ids"`
	MetaInfo  sglangMeta `json:"meta_info"`
}

type sglangFormat struct{ s *Server }

func (f *sglangFormat) contentType() string                { return "text/event-stream" }
func (f *sglangFormat) begin(b []byte, _ *exchange) []byte { return b }

func (f *sglangFormat) obj(x *exchange, ev Event) sglangEvent {
	e := sglangEvent{Text: string(x.text), OutputIDs: x.ids, MetaInfo: sglangMeta{
		ID: "sim-" + x.id, PromptTokens: x.g.promptTokens, WeightVersion: "default", CompletionTokens: ev.Total, CachedTokens: ev.Cached,
	}}
	if e.OutputIDs == nil {
		e.OutputIDs = []int{}
	}
	if r := f.s.p.Reasoning; r != nil {
		e.MetaInfo.ReasoningTokens = min(r.Tokens, ev.Total)
	}
	if ev.Done {
		if ev.Finish == "length" {
			e.MetaInfo.FinishReason = map[string]any{"type": "length", "length": ev.Total}
		} else {
			e.MetaInfo.FinishReason = map[string]any{"type": "stop", "matched": 151645}
		}
		lat := time.Since(x.arrived).Seconds()
		e.MetaInfo.E2ELatency = &lat
		if f.s.p.Wire.RequestTimes && !x.admitted.IsZero() {
			inf := time.Since(x.admitted).Seconds()
			e.MetaInfo.InferenceTime = &inf
		}
		if x.spec && ev.VerifySteps > 0 {
			ct := ev.VerifySteps
			acc := float64(ev.Total) / float64(ct)
			e.MetaInfo.SpecVerifyCt, e.MetaInfo.SpecAcceptLength = &ct, &acc
		}
	}
	return e
}

func (f *sglangFormat) event(b []byte, x *exchange, ev Event, _ []byte, _ []int) []byte {
	return sse(b, f.obj(x, ev))
}

func (f *sglangFormat) end(b []byte, _ *exchange, _ Event) []byte {
	return append(b, "data: [DONE]\n\n"...)
}

func (f *sglangFormat) whole(x *exchange, ev Event) any { return f.obj(x, ev) }

func (f *sglangFormat) fail(b []byte, msg string) []byte {
	return sse(b, map[string]any{"error": map[string]any{"message": msg}})
}

func (s *Server) healthGenerate(w http.ResponseWriter, r *http.Request) {
	if s.loading() {
		w.WriteHeader(503)
		return
	}
	st, err := s.eng.Submit(Job{PromptTokens: 1, MaxTokens: 1, Length: 1})
	if err != nil {
		w.WriteHeader(503)
		return
	}
	for {
		select {
		case <-st.Ready():
			for _, ev := range st.Take(nil) {
				if ev.Done {
					w.WriteHeader(200)
					return
				}
			}
		case <-r.Context().Done():
			s.eng.Cancel(st)
			return
		}
	}
}

func (s *Server) sglangModelInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{"model_path": s.p.Model, "tokenizer_path": s.p.Model, "is_generation": true})
}

func (s *Server) sglangServerInfo(w http.ResponseWriter, r *http.Request) {
	spec := any(nil)
	if s.p.Spec != nil {
		spec = s.p.Spec.Method
	}
	writeJSON(w, 200, map[string]any{
		"version": s.version("0.5.5"), "model_path": s.p.Model, "tp_size": s.p.GPUs,
		"max_running_requests": s.p.MaxRunning, "chunked_prefill_size": s.p.ChunkedPrefill,
		"stream_interval": s.p.StreamInterval, "speculative_algorithm": spec, "context_length": s.p.ContextLength,
		"max_total_num_tokens": s.p.KVTokens, "simulated": true, "sim_profile": s.p.Name,
	})
}
