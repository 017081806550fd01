package sim

import (
	"encoding/json"
	"net/http"
	"strings"
)

// TGI: /generate_stream, /info and its metrics; its /generate with
// "inputs" is served through SGLang's route (sglang.go).

func init() {
	imitate("tgi", imitation{
		serve: func(s *Server, m *http.ServeMux) {
			m.HandleFunc("POST /generate_stream", s.tgiStream)
		},
		own: func(s *Server, m *http.ServeMux) {
			m.HandleFunc("GET /info", s.tgiInfo)
		},
		metrics: func(s *Server, x *exposition) {
			x.metric("tgi_batch_current_size", "gauge", "Current batch size", float64(s.eng.Running.Load()))
			x.metric("tgi_queue_size", "gauge", "Current queue size", float64(s.eng.Waiting.Load()))
			x.metric("tgi_request_generated_tokens_total", "counter", "Generated tokens", float64(s.eng.GenTotal.Load()))
		},
		tgiOpenAI:   true,
		roleEvery:   true,
		fingerprint: func(s *Server) string { return s.version("3.3.6") + "-native" },
	})
}

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
	// TGI sends details only when asked, on /generate_stream as on
	// /generate (router/src/server.rs; testdata/wire/tgi-2.0.3-generate-stream.sse
	// ends with "details": null).
	s.serve(w, r, g, &tgiFormat{details: details})
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

func (s *Server) tgiInfo(w http.ResponseWriter, r *http.Request) {
	maxC := s.p.MaxConcurrent
	if maxC == 0 {
		maxC = 128
	}
	writeJSON(w, 200, map[string]any{
		"model_id": s.p.Model, "max_concurrent_requests": maxC, "max_input_tokens": s.p.ContextLength - 1,
		"max_total_tokens": s.p.ContextLength, "version": s.version("3.3.6"), "router": "text-generation-router",
	})
}
