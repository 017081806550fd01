package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// nativeRequest holds the fields of SGLang's and TGI's /generate, which
// share a path and differ by body ("text"/"input_ids" or "inputs").
type nativeRequest struct {
	Text           json.RawMessage `json:"text"`
	InputIDs       []int           `json:"input_ids"`
	SamplingParams struct {
		MaxNewTokens *int     `json:"max_new_tokens"`
		MinNewTokens int      `json:"min_new_tokens"`
		IgnoreEOS    bool     `json:"ignore_eos"`
		Temperature  *float64 `json:"temperature"`
	} `json:"sampling_params"`
	Stream bool `json:"stream"`

	Inputs     *string    `json:"inputs"`
	Parameters *tgiParams `json:"parameters"`
}

type tgiParams struct {
	MaxNewTokens *int     `json:"max_new_tokens"`
	Details      bool     `json:"details"`
	Temperature  *float64 `json:"temperature"`
	Seed         *int64   `json:"seed"`
}

func nativeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{"message": msg, "code": code}})
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
	ID               string   `json:"id"`
	FinishReason     any      `json:"finish_reason"`
	PromptTokens     int      `json:"prompt_tokens"`
	CompletionTokens int      `json:"completion_tokens"`
	CachedTokens     int      `json:"cached_tokens"`
	E2ELatency       *float64 `json:"e2e_latency,omitempty"`
	SpecVerifyCt     *int     `json:"spec_verify_ct,omitempty"`
	SpecAcceptLength *float64 `json:"spec_accept_length,omitempty"`
}

type sglangEvent struct {
	Text     string     `json:"text"`
	MetaInfo sglangMeta `json:"meta_info"`
}

type sglangFormat struct{ s *Server }

func (f *sglangFormat) contentType() string                { return "text/event-stream" }
func (f *sglangFormat) begin(b []byte, _ *exchange) []byte { return b }

func (f *sglangFormat) obj(x *exchange, ev Event) sglangEvent {
	e := sglangEvent{Text: string(x.text), MetaInfo: sglangMeta{
		ID: "sim-" + x.id, PromptTokens: x.g.promptTokens, CompletionTokens: ev.Total, CachedTokens: ev.Cached,
	}}
	if ev.Done {
		if ev.Finish == "length" {
			e.MetaInfo.FinishReason = map[string]any{"type": "length", "length": ev.Total}
		} else {
			e.MetaInfo.FinishReason = map[string]any{"type": "stop", "matched": 151645}
		}
		lat := time.Since(x.arrived).Seconds()
		e.MetaInfo.E2ELatency = &lat
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

// TGI: /generate_stream and /generate with "inputs".

func (s *Server) tgiStream(w http.ResponseWriter, r *http.Request) {
	var req nativeRequest
	if err := decodeBody(r, &req); err != nil {
		writeJSON(w, 422, map[string]any{"error": err.Error(), "error_type": "validation"})
		return
	}
	if req.Inputs == nil {
		writeJSON(w, 422, map[string]any{"error": "missing field `inputs`", "error_type": "validation"})
		return
	}
	s.tgi(w, r, &req, true)
}

func (s *Server) tgi(w http.ResponseWriter, r *http.Request, req *nativeRequest, stream bool) {
	g := &gen{route: r.URL.Path, prompt: *req.Inputs, promptTokens: s.count(*req.Inputs), stream: stream, maxTokens: 100, temperature: 0}
	details := false
	if p := req.Parameters; p != nil {
		if p.MaxNewTokens != nil {
			g.maxTokens = *p.MaxNewTokens
		}
		if p.Temperature != nil {
			g.temperature = *p.Temperature
		}
		if p.Seed != nil {
			g.seed = *p.Seed
		}
		details = p.Details
	}
	// TGI's stream always ends with details; a server without counts
	// (Wire.OmitUsage) sends them only when asked, as TGI's /generate does.
	s.serve(w, r, g, &tgiFormat{details: details || (stream && !s.p.Wire.OmitUsage)})
}

type tgiToken struct {
	ID      int     `json:"id"`
	Text    string  `json:"text"`
	Logprob float64 `json:"logprob"`
	Special bool    `json:"special"`
}

type tgiDetails struct {
	FinishReason    string `json:"finish_reason"`
	GeneratedTokens int    `json:"generated_tokens"`
	Seed            *int64 `json:"seed"`
	InputLength     int    `json:"input_length"`
}

type tgiEvent struct {
	Index         int         `json:"index"`
	Token         tgiToken    `json:"token"`
	GeneratedText *string     `json:"generated_text"`
	Details       *tgiDetails `json:"details"`
}

type tgiFormat struct{ details bool }

func (f *tgiFormat) contentType() string                { return "text/event-stream" }
func (f *tgiFormat) begin(b []byte, _ *exchange) []byte { return b }

func tgiFinish(ev Event) string {
	if ev.Finish == "length" {
		return "length"
	}
	return "eos_token"
}

// event writes one SSE event per token, even when the engine step made
// several: TGI's stream is bursty under speculation, never packed.
func (f *tgiFormat) event(b []byte, x *exchange, ev Event, piece []byte, ids []int) []byte {
	first := ev.Total - len(ids)
	words := strings.Fields(string(piece)) // one a token
	for i, id := range ids {
		tok := ""
		if i < len(words) {
			tok = " " + words[i]
		}
		e := tgiEvent{Index: first + i + 1, Token: tgiToken{ID: id, Text: tok, Logprob: -0.25}}
		if ev.Done && i == len(ids)-1 {
			text := strings.TrimPrefix(string(x.text), "")
			e.GeneratedText = &text
			if f.details {
				e.Details = &tgiDetails{FinishReason: tgiFinish(ev), GeneratedTokens: ev.Total, InputLength: x.g.promptTokens}
			}
		}
		j, _ := json.Marshal(e)
		b = append(b, "data:"...)
		b = append(b, j...)
		b = append(b, '\n', '\n')
	}
	return b
}

func (f *tgiFormat) end(b []byte, _ *exchange, _ Event) []byte { return b }

func (f *tgiFormat) whole(x *exchange, ev Event) any {
	out := map[string]any{"generated_text": string(x.text)}
	if f.details {
		out["details"] = tgiDetails{FinishReason: tgiFinish(ev), GeneratedTokens: ev.Total, InputLength: x.g.promptTokens}
	}
	return out
}

func (f *tgiFormat) fail(b []byte, msg string) []byte {
	j, _ := json.Marshal(map[string]any{"error": msg, "error_type": "generation"})
	return append(append(append(b, "data:"...), j...), '\n', '\n')
}

// llama.cpp: /completion.

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
	prompt, decode := x.engineTimes()
	promptMs := float64(prompt.Microseconds()) / 1e3
	predMs := float64(decode.Microseconds()) / 1e3
	perTok, perSec := 0.0, 0.0
	if n := ev.Total - 1; n > 0 && predMs > 0 {
		perTok, perSec = predMs/float64(n), float64(n)/predMs*1e3
	}
	stopType := "eos"
	if ev.Finish == "length" {
		stopType = "limit"
	}
	computed := x.g.promptTokens - x.cached // prompt_n leaves out cache_n
	return map[string]any{
		"index": 0, "content": content, "tokens": []int{}, "id_slot": 0, "stop": true, "model": f.s.p.Model,
		"tokens_predicted": ev.Total, "tokens_evaluated": x.g.promptTokens, "stop_type": stopType,
		"timings": map[string]any{
			"cache_n": x.cached, "prompt_n": computed, "prompt_ms": promptMs,
			"prompt_per_token_ms": promptMs / float64(max(computed, 1)),
			"prompt_per_second":   float64(computed) / max(promptMs, 1e-3) * 1e3,
			"predicted_n":         ev.Total, "predicted_ms": predMs,
			"predicted_per_token_ms": perTok, "predicted_per_second": perSec,
		},
	}
}

func (f *llamaFormat) end(b []byte, x *exchange, ev Event) []byte {
	return sse(b, f.final(x, ev, ""))
}

func (f *llamaFormat) whole(x *exchange, ev Event) any { return f.final(x, ev, string(x.text)) }

func (f *llamaFormat) fail(b []byte, msg string) []byte {
	return sse(b, map[string]any{"error": map[string]any{"code": 500, "message": msg, "type": "server_error"}})
}

// Ollama: /api/generate and /api/chat, NDJSON.

type ollamaRequest struct {
	Model    string        `json:"model"`
	Prompt   *string       `json:"prompt"`
	Messages []chatMessage `json:"messages"`
	Stream   *bool         `json:"stream"`
	Options  struct {
		NumPredict  *int     `json:"num_predict"`
		Temperature *float64 `json:"temperature"`
		Seed        *int64   `json:"seed"`
	} `json:"options"`
}

func (s *Server) ollamaGenerate(w http.ResponseWriter, r *http.Request) { s.ollama(w, r, false) }
func (s *Server) ollamaChat(w http.ResponseWriter, r *http.Request)     { s.ollama(w, r, true) }

func (s *Server) ollama(w http.ResponseWriter, r *http.Request, chat bool) {
	var req ollamaRequest
	if err := decodeBody(r, &req); err != nil {
		writeJSON(w, 400, map[string]any{"error": err.Error()})
		return
	}
	g := &gen{route: r.URL.Path, stream: req.Stream == nil || *req.Stream, temperature: 0.8, chat: chat}
	if chat {
		g.promptTokens = 3
		for _, m := range req.Messages {
			t, err := m.text()
			if err != nil {
				writeJSON(w, 400, map[string]any{"error": err.Error()})
				return
			}
			g.prompt += m.Role + ":" + t + "\n"
			g.promptTokens += 4 + s.count(t)
			g.msgs = append(g.msgs, message{m.Role, t})
		}
	} else {
		if req.Prompt == nil {
			writeJSON(w, 400, map[string]any{"error": "prompt is required"})
			return
		}
		g.prompt = *req.Prompt
		g.wrap = 26 // the model's template wraps the prompt
		g.promptTokens = g.wrap + s.count(g.prompt)
	}
	g.maxTokens = s.p.ContextLength - g.promptTokens
	if o := req.Options; o.NumPredict != nil && *o.NumPredict >= 0 {
		g.maxTokens = min(*o.NumPredict, g.maxTokens)
	}
	if req.Options.Temperature != nil {
		g.temperature = *req.Options.Temperature
	}
	if req.Options.Seed != nil {
		g.seed = *req.Options.Seed
	}
	s.serve(w, r, g, &ollamaFormat{s: s, chat: chat})
}

type ollamaFormat struct {
	s    *Server
	chat bool
}

func (f *ollamaFormat) contentType() string                { return "application/x-ndjson" }
func (f *ollamaFormat) begin(b []byte, _ *exchange) []byte { return b }

func (f *ollamaFormat) line(b []byte, v any) []byte {
	j, _ := json.Marshal(v)
	return append(append(b, j...), '\n')
}

func (f *ollamaFormat) piece(text string, done bool) map[string]any {
	m := map[string]any{"model": f.s.p.Model, "created_at": time.Now().UTC().Format(time.RFC3339Nano), "done": done}
	if f.chat {
		m["message"] = map[string]any{"role": "assistant", "content": text}
	} else {
		m["response"] = text
	}
	return m
}

// event writes one line per token, as Ollama does.
func (f *ollamaFormat) event(b []byte, _ *exchange, _ Event, piece []byte, _ []int) []byte {
	for _, w := range strings.Fields(string(piece)) { // one a token
		b = f.line(b, f.piece(" "+w, false))
	}
	return b
}

// final is the last line, with Ollama's durations: prompt_eval_duration
// from the slot to the first token (prefill; the wait for a slot happens
// before Ollama's runner starts its clock), eval_duration the compute after
// the first token (the steps that made tokens 2..n, while eval_count is n),
// total_duration the whole request (Ollama v0.17.4: 29 prompt tokens in
// 447 ms, 6 tokens in 1.002 s, 1.696 s in all with a 243 ms load).
func (f *ollamaFormat) final(x *exchange, ev Event, text string) map[string]any {
	prompt, decode := x.engineTimes()
	m := f.piece(text, true)
	reason := "stop"
	if ev.Finish == "length" {
		reason = "length"
	}
	m["done_reason"] = reason
	m["total_duration"] = time.Since(x.arrived).Nanoseconds()
	m["load_duration"] = 0
	m["prompt_eval_count"] = x.g.promptTokens
	m["prompt_eval_duration"] = prompt.Nanoseconds()
	m["eval_count"] = ev.Total
	m["eval_duration"] = decode.Nanoseconds()
	return m
}

func (f *ollamaFormat) end(b []byte, x *exchange, ev Event) []byte {
	return f.line(b, f.final(x, ev, ""))
}

func (f *ollamaFormat) whole(x *exchange, ev Event) any { return f.final(x, ev, string(x.text)) }

func (f *ollamaFormat) fail(b []byte, msg string) []byte {
	return f.line(b, map[string]any{"error": msg})
}
