package backend

import (
	"encoding/json"
	"strings"

	"github.com/tokperf/tokperf/internal/record"
)

// responses is the OpenAI Responses API: POST /v1/responses, stream true.
// Its stream is typed events (OpenAI's API reference, "Streaming
// events"; vLLM and SGLang serve the same): each delta event,
// response.output_text.delta, response.reasoning_text.delta or
// response.reasoning_summary_text.delta, and
// response.function_call_arguments.delta, is a chunk counted one token
// (the API gives no count per event); response.output_item.added opens a
// function call (call_id, name) and response.output_item.done may carry
// a call sent whole. response.completed or response.incomplete is the
// finish, with the usage: input_tokens (input_tokens_details.cached_tokens)
// and output_tokens (output_tokens_details.reasoning_tokens).
// response.failed and error events fail the request.
type responses struct{}

var _ protocol = responses{}

func init() {
	endpoints["responses"] = endpoint{"", func(*Config) protocol { return responses{} }}
}

func (responses) route() string { return "/v1/responses" }

type responsesBody struct {
	Model           string            `json:"model,omitempty"`
	Input           []json.RawMessage `json:"input"`
	MaxOutputTokens int               `json:"max_output_tokens"`
	Stream          bool              `json:"stream"`
	Temperature     float64           `json:"temperature"`
	// Seed and IgnoreEOS are no fields of OpenAI's API: they go only when
	// asked, to the servers that read them (vLLM), and a server that
	// refuses them says so.
	Seed      int64             `json:"seed,omitempty"`
	IgnoreEOS bool              `json:"ignore_eos,omitempty"`
	Tools     []json.RawMessage `json:"tools,omitempty"`
	Text      *struct {
		Format json.RawMessage `json:"format"`
	} `json:"text,omitempty"`
}

// body sends the conversation as input items: each message with its
// role, an assistant's tool calls as function_call items and a tool's
// answer as a function_call_output.
func (responses) body(cfg *Config, req *record.Request) ([]byte, error) {
	b := responsesBody{Model: cfg.Model, MaxOutputTokens: req.MaxTokens, Stream: true, Temperature: req.Temperature, Seed: req.Seed, IgnoreEOS: req.IgnoreEOS}
	for _, t := range turns(req) {
		var items []any
		switch {
		case t.role == "tool":
			items = append(items, map[string]string{"type": "function_call_output", "call_id": t.callID, "output": t.content})
		default:
			if t.content != "" || len(t.calls) == 0 {
				items = append(items, map[string]string{"type": "message", "role": t.role, "content": t.content})
			}
			for _, c := range t.calls {
				items = append(items, map[string]string{"type": "function_call", "call_id": c.ID, "name": c.Name, "arguments": c.Arguments})
			}
		}
		for _, it := range items {
			raw, err := json.Marshal(it)
			if err != nil {
				return nil, err
			}
			b.Input = append(b.Input, raw)
		}
	}
	tools, err := chatTools(req.Tools)
	if err != nil {
		return nil, err
	}
	for _, t := range tools {
		raw, err := json.Marshal(map[string]any{"type": "function", "name": t.Function.Name, "description": t.Function.Description, "parameters": t.Function.Parameters})
		if err != nil {
			return nil, err
		}
		b.Tools = append(b.Tools, raw)
	}
	if f := responsesFormat(cfg.Format); f != nil {
		b.Text = &struct {
			Format json.RawMessage `json:"format"`
		}{f}
	}
	return json.Marshal(&b)
}

func (responses) framing() framing { return sse }

type responsesEvent struct {
	Type        string `json:"type"`
	Delta       string `json:"delta"`
	OutputIndex int    `json:"output_index"`
	Item        *struct {
		Type      string `json:"type"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"item"`
	Response *struct {
		Status string `json:"status"`
		Usage  *struct {
			InputTokens        int `json:"input_tokens"`
			InputTokensDetails *struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"input_tokens_details"`
			OutputTokens        int `json:"output_tokens"`
			OutputTokensDetails *struct {
				ReasoningTokens int `json:"reasoning_tokens"`
			} `json:"output_tokens_details"`
		} `json:"usage"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Error *streamError `json:"error"`
	} `json:"response"`
	Message string       `json:"message"` // an error event's
	Error   *streamError `json:"error"`
}

func (responses) read(s *stream) bool {
	rec := s.rec
	var (
		thinking, tooling int
		tools             calls
		streamed          = map[int]bool{} // calls whose arguments came as deltas
	)
	for s.Next() {
		var e responsesEvent
		if !s.decode(&e) {
			return false
		}
		if e.Delta == "" && strings.HasSuffix(e.Type, ".delta") {
			continue // an empty fragment carries no token
		}
		switch e.Type {
		case "response.output_text.delta":
			if s.text != nil {
				s.text.WriteString(e.Delta)
			}
			s.chunk(1, true)
		case "response.reasoning_text.delta", "response.reasoning_summary_text.delta":
			s.chunk(1, false)
			thinking++
		case "response.function_call_arguments.delta":
			tools.add(rec, e.OutputIndex, "", "", e.Delta)
			streamed[e.OutputIndex] = true
			s.chunk(1, true)
			tooling++
		case "response.output_item.added", "response.output_item.done":
			if it := e.Item; it != nil && it.Type == "function_call" {
				tools.add(rec, e.OutputIndex, it.CallID, it.Name, "")
				if e.Type == "response.output_item.done" && !streamed[e.OutputIndex] && it.Arguments != "" {
					// A call sent whole, with no deltas: one chunk.
					tools.add(rec, e.OutputIndex, "", "", it.Arguments)
					s.chunk(1, true)
					tooling++
				}
			}
		case "response.completed", "response.incomplete":
			responsesDone(rec, &e)
			s.last()
			chunkCounts(rec, thinking, tooling)
			return true
		case "response.failed":
			msg := "response.failed"
			if r := e.Response; r != nil && r.Error != nil {
				msg = r.Error.Message
			}
			s.fail(msg)
			return false
		case "error":
			msg := e.Message
			if e.Error != nil {
				msg = e.Error.Message
			}
			s.fail(msg)
			return false
		}
	}
	chunkCounts(rec, thinking, tooling)
	return false
}

// responsesDone reads the finishing event: the status, or the reason an
// incomplete response stopped, as the finish reason, and the usage.
func responsesDone(rec *record.Record, e *responsesEvent) {
	r := e.Response
	if r == nil {
		rec.FinishReason = e.Type[len("response."):]
		return
	}
	rec.FinishReason = r.Status
	if d := r.IncompleteDetails; d != nil && d.Reason != "" {
		rec.FinishReason = d.Reason
	}
	u := r.Usage
	if u == nil {
		return
	}
	rec.OutputTokens, rec.OutputSource = u.OutputTokens, record.SourceUsage
	rec.PromptTokens, rec.PromptSource = u.InputTokens, record.SourceUsage
	if d := u.InputTokensDetails; d != nil {
		rec.CachedTokens = d.CachedTokens
	}
	if d := u.OutputTokensDetails; d != nil {
		rec.ReasoningTokens, rec.ReasoningSource = d.ReasoningTokens, record.SourceUsage
	}
}

// chunkCounts fills what the server did not state from the chunks, each
// counted one token (these streams carry no count per event): the
// output, the reasoning (chunks of reasoning) and the tool-call tokens.
func chunkCounts(rec *record.Record, thinking, tooling int) {
	rec.ChunkSource = record.SourceChunks
	if rec.OutputSource == record.SourceNone {
		rec.OutputTokens, rec.OutputSource = rec.ChunkTokens(), record.SourceChunks
	}
	if rec.ReasoningSource == record.SourceNone && thinking > 0 {
		rec.ReasoningTokens, rec.ReasoningSource = thinking, record.SourceChunks
	}
	if tooling > 0 {
		rec.ToolTokens, rec.ToolSource = tooling, record.SourceChunks
	}
}
