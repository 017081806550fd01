package backend

import (
	"encoding/json"
	"strings"

	"github.com/tokperf/tokperf/internal/record"
)

// messages is the Anthropic Messages API: POST /v1/messages, stream true
// (Anthropic's "Streaming Messages"; vLLM and llama-server serve the
// same). Its events: message_start (message.usage.input_tokens), then
// per content block content_block_start (text, thinking or tool_use with
// its id and name), content_block_delta events (text_delta, thinking_delta,
// input_json_delta; a signature_delta carries no token) and
// content_block_stop; message_delta (delta.stop_reason, usage.output_tokens,
// cumulative), message_stop the finish; ping events are nothing; an
// error event fails the request. Each token delta is a chunk counted one
// token (the API gives no count per event). The prompt is input_tokens
// plus the cache's reads and writes (Anthropic counts them apart), from
// the last usage that states it; thinking has no count of its own, so its
// chunks are counted.
type messages struct{}

var _ protocol = messages{}

func init() {
	endpoints["messages"] = endpoint{"", func(*Config) protocol { return messages{} }}
}

func (messages) route() string { return "/v1/messages" }

type messagesBody struct {
	Model       string            `json:"model,omitempty"`
	MaxTokens   int               `json:"max_tokens"`
	System      string            `json:"system,omitempty"`
	Messages    []messagesTurn    `json:"messages"`
	Stream      bool              `json:"stream"`
	Temperature float64           `json:"temperature"`
	IgnoreEOS   bool              `json:"ignore_eos,omitempty"` // vLLM's, only when asked
	Tools       []json.RawMessage `json:"tools,omitempty"`
	// OutputFormat is Anthropic's structured output (Format.messages).
	OutputFormat json.RawMessage `json:"output_format,omitempty"`
}

type messagesTurn struct {
	Role    string `json:"role"`
	Content any    `json:"content"` // a string, or blocks
}

// body sends the system turns as system, an assistant's tool calls as
// tool_use blocks and a tool's answer as a user turn's tool_result block.
func (messages) body(cfg *Config, req *record.Request) ([]byte, error) {
	b := messagesBody{Model: cfg.Model, MaxTokens: req.MaxTokens, Stream: true, Temperature: req.Temperature, IgnoreEOS: req.IgnoreEOS,
		OutputFormat: messagesFormat(cfg.Format)}
	var system []string
	for _, t := range turns(req) {
		switch {
		case t.role == "system" || t.role == "developer":
			system = append(system, t.content)
		case t.role == "tool":
			b.Messages = append(b.Messages, messagesTurn{"user", []map[string]any{{"type": "tool_result", "tool_use_id": t.callID, "content": t.content}}})
		case len(t.calls) > 0:
			var blocks []map[string]any
			if t.content != "" {
				blocks = append(blocks, map[string]any{"type": "text", "text": t.content})
			}
			for _, c := range t.calls {
				blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": jsonObject(c.Arguments)})
			}
			b.Messages = append(b.Messages, messagesTurn{t.role, blocks})
		default:
			b.Messages = append(b.Messages, messagesTurn{t.role, t.content})
		}
	}
	b.System = strings.Join(system, "\n")
	tools, err := chatTools(req.Tools)
	if err != nil {
		return nil, err
	}
	for _, t := range tools {
		schema := t.Function.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`) // required by the API
		}
		raw, err := json.Marshal(map[string]any{"name": t.Function.Name, "description": t.Function.Description, "input_schema": schema})
		if err != nil {
			return nil, err
		}
		b.Tools = append(b.Tools, raw)
	}
	return json.Marshal(&b)
}

func (messages) framing() framing { return sse }

type messagesUsage struct {
	InputTokens   *int `json:"input_tokens"`
	OutputTokens  *int `json:"output_tokens"`
	CacheRead     int  `json:"cache_read_input_tokens"`
	CacheCreation int  `json:"cache_creation_input_tokens"`
}

type messagesEvent struct {
	Type    string `json:"type"`
	Index   int    `json:"index"`
	Message *struct {
		Usage *messagesUsage `json:"usage"`
	} `json:"message"`
	Block *struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta *struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Thinking    string `json:"thinking"`
		PartialJSON string `json:"partial_json"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *messagesUsage `json:"usage"`
	Error *streamError   `json:"error"`
}

func (messages) read(s *stream) bool {
	rec := s.rec
	var (
		thinking, tooling int
		tools             calls
	)
	for s.Next() {
		var e messagesEvent
		if !s.decode(&e) {
			return false
		}
		switch e.Type {
		case "message_start":
			if m := e.Message; m != nil {
				messagesCounts(rec, m.Usage)
			}
		case "content_block_start":
			if b := e.Block; b != nil && b.Type == "tool_use" {
				tools.add(rec, e.Index, b.ID, b.Name, "")
			}
		case "content_block_delta":
			d := e.Delta
			if d == nil || d.Text+d.Thinking+d.PartialJSON == "" {
				continue // a signature, or an empty first fragment: no token
			}
			switch d.Type {
			case "text_delta":
				if s.text != nil {
					s.text.WriteString(d.Text)
				}
				s.chunk(1, true)
			case "thinking_delta":
				s.chunk(1, false)
				thinking++
			case "input_json_delta":
				tools.add(rec, e.Index, "", "", d.PartialJSON)
				s.chunk(1, true)
				tooling++
			}
		case "message_delta":
			if d := e.Delta; d != nil && d.StopReason != "" {
				rec.FinishReason = d.StopReason
			}
			messagesCounts(rec, e.Usage)
		case "message_stop":
			s.last()
			chunkCounts(rec, thinking, tooling)
			return true
		case "error":
			msg := "error event"
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

// messagesCounts takes what a usage states: the output (cumulative, so
// the last wins; message_start's is a placeholder, 0 or 1, before any
// token, so only a count after tokens is read), and the prompt with the
// cache's share.
func messagesCounts(rec *record.Record, u *messagesUsage) {
	if u == nil {
		return
	}
	if u.OutputTokens != nil && len(rec.Chunks) > 0 {
		rec.OutputTokens, rec.OutputSource = *u.OutputTokens, record.SourceUsage
	}
	if u.InputTokens != nil {
		rec.PromptTokens, rec.PromptSource = *u.InputTokens+u.CacheRead+u.CacheCreation, record.SourceUsage
		rec.CachedTokens = u.CacheRead
	}
}
