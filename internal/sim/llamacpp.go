package sim

import (
	"encoding/json"
	"net/http"
)

// llama.cpp: /completion, /props, /tokenize and /detokenize ("content"),
// cache_prompt on the OpenAI routes, and its metrics.

func init() {
	imitate("llamacpp", imitation{
		serve: func(s *Server, m *http.ServeMux) {
			m.HandleFunc("POST /completion", s.llamaCompletion)
		},
		own: func(s *Server, m *http.ServeMux) {
			m.HandleFunc("GET /props", s.llamaProps)
			s.tokenizeRoutes(m, "content")
		},
		metrics: func(s *Server, x *exposition) {
			x.metric("llamacpp:prompt_tokens_total", "counter", "Number of prompt tokens processed, excluding cached tokens", float64(s.eng.PromptTotal.Load()))
			x.metric("llamacpp:tokens_predicted_total", "counter", "Number of generation tokens processed.", float64(s.eng.GenTotal.Load()))
			x.metric("llamacpp:requests_processing", "gauge", "Number of requests processing.", float64(s.eng.Running.Load()))
			x.metric("llamacpp:requests_deferred", "gauge", "Number of requests deferred.", float64(s.eng.Waiting.Load()))
		},
		cachePrompt: true,
		timings:     true,
		modelMeta:   true,
		fingerprint: func(s *Server) string { return "b" + s.version("10573") + "-d775b8967" },
	})
}

type llamaRequest struct {
	Prompt      json.RawMessage `json:"prompt"`
	NPredict    *int            `json:"n_predict"`
	IgnoreEOS   bool            `json:"ignore_eos"`
	Stream      bool            `json:"stream"`
	Temperature *float64        `json:"temperature"`
	Seed        *int64          `json:"seed"`
	CachePrompt *bool           `json:"cache_prompt"`
}

func (s *Server) llamaCompletion(w http.ResponseWriter, r *http.Request) {
	var req llamaRequest
	if err := decodeBody(r, &req); err != nil {
		nativeError(w, 400, err.Error())
		return
	}
	g := &gen{route: "/completion", stream: req.Stream, ignoreEOS: req.IgnoreEOS, temperature: 0.8, uncached: req.CachePrompt != nil && !*req.CachePrompt}
	if err := s.parsePrompt(g, req.Prompt); err != nil {
		nativeError(w, 400, err.Error())
		return
	}
	g.maxTokens = s.p.ContextLength - g.promptTokens
	if req.NPredict != nil && *req.NPredict >= 0 {
		g.maxTokens = min(*req.NPredict, g.maxTokens)
	}
	if req.Temperature != nil {
		g.temperature = *req.Temperature
	}
	if req.Seed != nil {
		g.seed = *req.Seed
	}
	s.serve(w, r, g, &llamaFormat{s: s})
}

type llamaFormat struct{ s *Server }

func (f *llamaFormat) contentType() string                { return "text/event-stream" }
func (f *llamaFormat) begin(b []byte, _ *exchange) []byte { return b }

func (f *llamaFormat) event(b []byte, x *exchange, ev Event, piece []byte, ids []int) []byte {
	if ev.Tokens == 0 {
		return b
	}
	if f.s.p.Wire.OmitUsage {
		ids = []int{} // token ids only with return_tokens
	}
	return sse(b, map[string]any{
		"index": 0, "content": string(piece), "tokens": ids, "stop": false, "id_slot": -1,
		"tokens_predicted": ev.Total, "tokens_evaluated": x.g.promptTokens,
	})
}

// final is the last event, with llama.cpp's timings: prompt_ms from the slot
// to the first token, predicted_ms from the first token to the last, so it
// covers n−1 tokens while predicted_n is n, and the per-token figures divide
// by n−1 (llama-server b10573: 6 tokens in 9.947 ms, 1.9894 ms a token).
func (f *llamaFormat) final(x *exchange, ev Event, content string) map[string]any {
	stopType := "eos"
	if ev.Finish == "length" {
		stopType = "limit"
	}
	return map[string]any{
		"index": 0, "content": content, "tokens": []int{}, "id_slot": 0, "stop": true, "model": f.s.p.Model,
		"tokens_predicted": ev.Total, "tokens_evaluated": x.g.promptTokens, "stop_type": stopType,
		"timings": llamaTimings(x, ev),
	}
}

// llamaTimings are llama.cpp's timings of a finished request: prompt_ms
// from the slot to the first token, predicted_ms from the first token to
// the last, so it covers n−1 tokens while predicted_n is n, and the
// per-token figures divide by n−1 (llama-server b10573: 6 tokens in
// 9.947 ms, 1.9894 ms a token).
func llamaTimings(x *exchange, ev Event) map[string]any {
	prompt, decode := x.engineTimes()
	promptMs := float64(prompt.Microseconds()) / 1e3
	predMs := float64(decode.Microseconds()) / 1e3
	perTok, perSec := 0.0, 0.0
	if n := ev.Total - 1; n > 0 && predMs > 0 {
		perTok, perSec = predMs/float64(n), float64(n)/predMs*1e3
	}
	computed := x.g.promptTokens - x.cached // prompt_n leaves out cache_n
	return map[string]any{
		"cache_n": x.cached, "prompt_n": computed, "prompt_ms": promptMs,
		"prompt_per_token_ms": promptMs / float64(max(computed, 1)),
		"prompt_per_second":   float64(computed) / max(promptMs, 1e-3) * 1e3,
		"predicted_n":         ev.Total, "predicted_ms": predMs,
		"predicted_per_token_ms": perTok, "predicted_per_second": perSec,
	}
}

func (f *llamaFormat) end(b []byte, x *exchange, ev Event) []byte {
	return sse(b, f.final(x, ev, ""))
}

func (f *llamaFormat) whole(x *exchange, ev Event) any { return f.final(x, ev, string(x.text)) }

func (f *llamaFormat) fail(b []byte, msg string) []byte {
	return sse(b, map[string]any{"error": map[string]any{"code": 500, "message": msg, "type": "server_error"}})
}

func (s *Server) llamaProps(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{
		"default_generation_settings": map[string]any{"n_ctx": s.p.ContextLength},
		"total_slots":                 s.p.MaxRunning, "model_path": s.p.Model, "build_info": "b" + s.version("10573"),
	})
}
