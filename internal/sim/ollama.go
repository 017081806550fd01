package sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Ollama: /api/generate and /api/chat, NDJSON; /api/version. It has no
// /metrics.

func init() {
	imitate("ollama", imitation{
		serve: func(s *Server, m *http.ServeMux) {
			m.HandleFunc("POST /api/generate", s.ollamaGenerate)
			m.HandleFunc("POST /api/chat", s.ollamaChat)
		},
		own: func(s *Server, m *http.ServeMux) {
			m.HandleFunc("GET /api/version", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, map[string]any{"version": s.version("0.17.4")})
			})
		},
		roleEvery:   true,
		fingerprint: func(*Server) string { return "fp_ollama" },
	})
}

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
