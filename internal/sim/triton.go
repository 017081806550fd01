package sim

import (
	"fmt"
	"net/http"
	"strings"
)

// Triton Inference Server with TensorRT-LLM's ensemble: the generate
// extension (POST /v2/models/{model}/generate and generate_stream,
// server repository docs/protocol/extension_generate.md) and the KServe
// v2 identity routes (/v2, /v2/models/{model}). Its /metrics is on
// another port (8002): none here.

func init() {
	imitate("triton", imitation{
		serve: func(s *Server, m *http.ServeMux) {
			m.HandleFunc("POST /v2/models/{model}/generate_stream", s.tritonGenerate)
			m.HandleFunc("POST /v2/models/{model}/generate", s.tritonGenerate)
		},
		own: func(s *Server, m *http.ServeMux) {
			m.HandleFunc("GET /v2", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, map[string]any{"name": "triton", "version": s.version("2.52.0"),
					"extensions": []string{"classification", "sequence", "model_repository", "schedule_policy", "model_configuration",
						"system_shared_memory", "cuda_shared_memory", "binary_tensor_data", "parameters", "statistics", "trace", "logging"}})
			})
			m.HandleFunc("GET /v2/models/{model}", func(w http.ResponseWriter, r *http.Request) {
				if s.tritonUnknown(w, r) {
					return
				}
				writeJSON(w, 200, map[string]any{"name": s.p.Model, "versions": []string{"1"}, "platform": "ensemble",
					"inputs":  []map[string]any{{"name": "text_input", "datatype": "BYTES", "shape": []int{-1, 1}}, {"name": "max_tokens", "datatype": "INT32", "shape": []int{-1, 1}}},
					"outputs": []map[string]any{{"name": "text_output", "datatype": "BYTES", "shape": []int{-1, -1}}}})
			})
			m.HandleFunc("GET /v2/health/ready", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
		},
	})
}

// tritonRequest is the generate request as TensorRT-LLM's ensemble reads
// it: text_input and the model's inputs beside it.
type tritonRequest struct {
	TextInput   *string  `json:"text_input"`
	MaxTokens   *int     `json:"max_tokens"`
	Temperature *float64 `json:"temperature"`
	Seed        *int64   `json:"random_seed"`
}

// tritonUnknown answers 400 for a model the server does not hold, as
// Triton does, and reports whether it did.
func (s *Server) tritonUnknown(w http.ResponseWriter, r *http.Request) bool {
	if m := r.PathValue("model"); m != s.p.Model {
		writeJSON(w, 400, map[string]any{"error": fmt.Sprintf("Request for unknown model: '%s' is not found", m)})
		return true
	}
	return false
}

func (s *Server) tritonGenerate(w http.ResponseWriter, r *http.Request) {
	if s.tritonUnknown(w, r) {
		return
	}
	var req tritonRequest
	if err := decodeBody(r, &req); err != nil {
		writeJSON(w, 400, map[string]any{"error": err.Error()})
		return
	}
	if req.TextInput == nil || req.MaxTokens == nil {
		writeJSON(w, 400, map[string]any{"error": "expected the inputs 'text_input' and 'max_tokens' for model '" + s.p.Model + "'"})
		return
	}
	stream := strings.HasSuffix(r.URL.Path, "/generate_stream")
	g := &gen{route: r.URL.Path, prompt: *req.TextInput, promptTokens: s.count(*req.TextInput), stream: stream, maxTokens: *req.MaxTokens}
	if req.Temperature != nil {
		g.temperature = *req.Temperature
	}
	if req.Seed != nil {
		g.seed = *req.Seed
	}
	s.serve(w, r, g, &tritonFormat{model: s.p.Model})
}

// tritonFormat writes one SSE event per engine step with the step's text
// in text_output, in the fields of TensorRT-LLM's ensemble
// (testdata/wire/triton-trtllm-generate-stream.sse): no count, no finish
// event; the stream's end is the answer's.
type tritonFormat struct{ model string }

func (f *tritonFormat) contentType() string                { return "text/event-stream; charset=utf-8" }
func (f *tritonFormat) begin(b []byte, _ *exchange) []byte { return b }

func (f *tritonFormat) event(b []byte, x *exchange, ev Event, piece []byte, ids []int) []byte {
	if ev.Tokens == 0 {
		return b
	}
	return sse(b, f.response(string(piece), len(ids)))
}

func (f *tritonFormat) response(text string, tokens int) map[string]any {
	return map[string]any{"batch_index": 0, "context_logits": 0.0, "cum_log_probs": 0.0, "generation_logits": 0.0,
		"model_name": f.model, "model_version": "1", "output_log_probs": make([]float64, tokens),
		"sequence_end": false, "sequence_id": 0, "sequence_index": 0, "sequence_start": false, "text_output": text}
}

func (f *tritonFormat) end(b []byte, _ *exchange, _ Event) []byte { return b }

func (f *tritonFormat) whole(x *exchange, ev Event) any {
	return f.response(string(x.text), ev.Total)
}

func (f *tritonFormat) fail(b []byte, msg string) []byte {
	return sse(b, map[string]any{"error": msg})
}
