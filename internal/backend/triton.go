package backend

import (
	"encoding/json"

	"github.com/tokperf/tokperf/internal/record"
)

// triton is Triton Inference Server's generate extension, streaming:
// POST /v2/models/{model}/generate_stream (server repository,
// docs/protocol/extension_generate.md). The model is in the route, so
// the protocol is made from the configuration. Each SSE event is a
// response object with "text_output"; an error is {"error": …}, sent in
// the stream after a 200. There is no finish event and no count: the
// stream's clean end is the finish, and each event is counted one token
// (an estimate: TensorRT-LLM streams one a step, but a step may carry
// several, and a model not set to stream sends the whole answer as one).
type triton struct{ path string }

var _ protocol = triton{}

func init() {
	natives["triton"] = func(cfg *Config) protocol {
		// The model is a directory of Triton's model repository, so no
		// "/" in it; routeURL escapes the rest.
		return triton{"/v2/models/" + cfg.Model + "/generate_stream"}
	}
}

func (t triton) route() string { return t.path }

// body is the generate request: text_input, and the model's own inputs
// beside it, here TensorRT-LLM's ensemble's (tensorrtllm_backend's
// examples send max_tokens, stream and empty bad_words and stop_words,
// which older ensembles require). Greedy is its default: temperature is
// sent only when asked.
func (triton) body(cfg *Config, req *record.Request) ([]byte, error) {
	return json.Marshal(struct {
		TextInput   string   `json:"text_input"`
		MaxTokens   int      `json:"max_tokens"`
		Stream      bool     `json:"stream"`
		BadWords    string   `json:"bad_words"`
		StopWords   string   `json:"stop_words"`
		Temperature *float64 `json:"temperature,omitempty"`
		Seed        int64    `json:"random_seed,omitempty"`
	}{TextInput: req.Prompt, MaxTokens: req.MaxTokens, Stream: true, Temperature: positive(req.Temperature), Seed: req.Seed})
}

// positive is &v where v > 0, else nil (not sent).
func positive(v float64) *float64 {
	if v > 0 {
		return &v
	}
	return nil
}

type tritonEvent struct {
	TextOutput *string `json:"text_output"`
	Error      string  `json:"error"`
}

func (triton) framing() framing { return sse }

func (triton) read(s *stream) bool {
	rec := s.rec
	for s.Next() {
		var e tritonEvent
		if !s.decode(&e) {
			return false
		}
		if e.Error != "" {
			s.fail(e.Error)
			return false
		}
		if e.TextOutput == nil {
			continue
		}
		if s.text != nil {
			s.text.WriteString(*e.TextOutput)
		}
		s.chunk(1, *e.TextOutput != "")
		s.last() // each event may be the last: the stream's end says so
	}
	rec.OutputTokens, rec.OutputSource, rec.ChunkSource = rec.ChunkTokens(), record.SourceChunks, record.SourceChunks
	// The end of the stream is the finish where it came cleanly and after
	// an answer; a read error is the transport's to report (finish).
	return len(rec.Chunks) > 0 && s.ev.Err() == nil
}
