package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Anthropic Messages API (POST /v1/messages), as Anthropic documents
// it and vLLM and llama-server serve it: max_tokens required, system
// apart from the messages, content a string or blocks, and a stream of
// named events: message_start (usage.input_tokens), ping, then per
// content block (thinking, text, tool_use) content_block_start, its
// content_block_delta events (thinking_delta, then a signature_delta;
// text_delta; input_json_delta) and content_block_stop, and last
// message_delta (stop_reason, usage.output_tokens, cumulative) and
// message_stop. With a prefix cache, message_delta's usage splits the
// prompt as Anthropic's does: input_tokens not read from the cache, and
// cache_read_input_tokens.

type messagesRequest struct {
	Model       string          `json:"model"`
	MaxTokens   *int            `json:"max_tokens"`
	Messages    []chatMessage   `json:"messages"`
	System      json.RawMessage `json:"system"`
	Stream      bool            `json:"stream"`
	Temperature *float64        `json:"temperature"`
	IgnoreEOS   bool            `json:"ignore_eos"` // vLLM's extension, as on its other routes
	Tools       []toolSpec      `json:"tools"`
	ToolChoice  json.RawMessage `json:"tool_choice"`
}

// blockText is a Messages content's text: a string, or its blocks' text,
// tool inputs and tool results included (what the template renders).
func blockText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Input   json.RawMessage `json:"input"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", fmt.Errorf("content is neither a string nor a list of blocks")
	}
	var b strings.Builder
	for _, bl := range blocks {
		switch bl.Type {
		case "tool_use":
			b.Write(bl.Input)
		case "tool_result":
			t, err := blockText(bl.Content)
			if err != nil {
				return "", err
			}
			b.WriteString(t)
		default:
			b.WriteString(bl.Text)
		}
		b.WriteByte(' ')
	}
	return b.String(), nil
}

func anthropicError(w http.ResponseWriter, code int, msg string) {
	typ := map[int]string{400: "invalid_request_error", 404: "not_found_error", 429: "rate_limit_error", 503: "overloaded_error"}[code]
	if typ == "" {
		typ = "api_error"
	}
	writeJSON(w, code, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	if s.absent(w, r) {
		return
	}
	var req messagesRequest
	if err := decodeBody(r, &req); err != nil {
		anthropicError(w, 400, err.Error())
		return
	}
	if req.Model != "" && req.Model != s.p.Model {
		anthropicError(w, 404, fmt.Sprintf("model: %s", req.Model))
		return
	}
	if req.MaxTokens == nil {
		anthropicError(w, 400, "max_tokens: Field required")
		return
	}
	if len(req.Messages) == 0 {
		anthropicError(w, 400, "messages: at least one message is required")
		return
	}
	var msgs []message
	sys, err := blockText(req.System)
	if err != nil {
		anthropicError(w, 400, "system: "+err.Error())
		return
	}
	if sys != "" {
		msgs = append(msgs, message{"system", sys})
	}
	for i, m := range req.Messages {
		t, err := blockText(m.Content)
		if err != nil {
			anthropicError(w, 400, fmt.Sprintf("messages.%d: %v", i, err))
			return
		}
		msgs = append(msgs, message{m.Role, t})
	}
	g := &gen{route: r.URL.Path, stream: req.Stream, ignoreEOS: req.IgnoreEOS, temperature: 1, chat: true, maxTokens: *req.MaxTokens}
	s.chatPrompt(g, msgs)
	if req.Temperature != nil {
		g.temperature = *req.Temperature
	}
	g.tools, g.choice = offers(req.Tools), readChoice(req.ToolChoice)
	s.serve(w, r, g, &messagesFormat{s: s})
}

// messagesFormat writes one message's events; it keeps the content block
// being streamed and the finished ones.
type messagesFormat struct {
	s    *Server
	open string // the type of the block being streamed, "" for none
	text strings.Builder
	done []map[string]any
}

func (f *messagesFormat) contentType() string { return "text/event-stream" }

func (f *messagesFormat) put(b []byte, typ string, v map[string]any) []byte {
	v["type"] = typ
	j, _ := json.Marshal(v)
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: "...)
	b = append(b, j...)
	return append(b, '\n', '\n')
}

// message is the message object: empty in message_start, whole in a
// non-streamed answer.
func (f *messagesFormat) message(x *exchange) map[string]any {
	content := f.done
	if content == nil {
		content = []map[string]any{}
	}
	return map[string]any{"id": "msg_" + x.id, "type": "message", "role": "assistant", "model": f.s.p.Model,
		"content": content, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": x.g.promptTokens, "output_tokens": 0}}
}

func (f *messagesFormat) begin(b []byte, x *exchange) []byte {
	b = f.put(b, "message_start", map[string]any{"message": f.message(x)})
	return f.put(b, "ping", map[string]any{})
}

// block is the content block of kind, empty as it starts or whole.
func (f *messagesFormat) block(x *exchange, kind string, done bool) map[string]any {
	text := ""
	if done {
		text = f.text.String()
	}
	switch kind {
	case "thinking":
		return map[string]any{"type": kind, "thinking": text, "signature": ""}
	case "tool_use":
		var input any = map[string]any{}
		if done {
			json.Unmarshal([]byte(text), &input)
		}
		return map[string]any{"type": kind, "id": "toolu_" + x.id, "name": x.g.tool, "input": input}
	}
	return map[string]any{"type": kind, "text": text}
}

func (f *messagesFormat) switchTo(b []byte, x *exchange, kind string) []byte {
	if f.open == kind {
		return b
	}
	b = f.closeBlock(b, x)
	f.open = kind
	return f.put(b, "content_block_start", map[string]any{"index": len(f.done), "content_block": f.block(x, kind, false)})
}

func (f *messagesFormat) closeBlock(b []byte, x *exchange) []byte {
	if f.open == "" {
		return b
	}
	if f.open == "thinking" {
		b = f.put(b, "content_block_delta", map[string]any{"index": len(f.done), "delta": map[string]any{"type": "signature_delta", "signature": "c2lt"}})
	}
	b = f.put(b, "content_block_stop", map[string]any{"index": len(f.done)})
	f.done = append(f.done, f.block(x, f.open, true))
	f.open = ""
	f.text.Reset()
	return b
}

func (f *messagesFormat) delta(b []byte, kind, field, text string) []byte {
	f.text.WriteString(text)
	return f.put(b, "content_block_delta", map[string]any{"index": len(f.done), "delta": map[string]any{"type": kind, field: text}})
}

func (f *messagesFormat) event(b []byte, x *exchange, ev Event, text []byte, _ []int) []byte {
	p := f.s.cut(x, ev, text)
	if p.thinking != "" {
		b = f.switchTo(b, x, "thinking")
		b = f.delta(b, "thinking_delta", "thinking", p.thinking)
	}
	if p.rest != "" {
		if x.g.tool != "" {
			b = f.switchTo(b, x, "tool_use")
			b = f.delta(b, "input_json_delta", "partial_json", p.rest)
		} else {
			b = f.switchTo(b, x, "text")
			b = f.delta(b, "text_delta", "text", p.rest)
		}
	}
	return b
}

// stop is the stop_reason of a message that ended so.
func stop(x *exchange, ev Event) string {
	switch {
	case x.opened:
		return "tool_use"
	case ev.Finish == "length":
		return "max_tokens"
	}
	return "end_turn"
}

// usage is message_delta's: the output so far, and the prompt split by
// the prefix cache where there is one.
func (f *messagesFormat) usage(x *exchange, ev Event) map[string]any {
	u := map[string]any{"output_tokens": ev.Total}
	if f.s.p.PrefixCache {
		u["input_tokens"], u["cache_read_input_tokens"], u["cache_creation_input_tokens"] = x.g.promptTokens-x.cached, x.cached, 0
	}
	return u
}

func (f *messagesFormat) end(b []byte, x *exchange, ev Event) []byte {
	b = f.closeBlock(b, x)
	d := map[string]any{"delta": map[string]any{"stop_reason": stop(x, ev), "stop_sequence": nil}}
	if !f.s.p.Wire.OmitUsage {
		d["usage"] = f.usage(x, ev)
	}
	b = f.put(b, "message_delta", d)
	return f.put(b, "message_stop", map[string]any{})
}

func (f *messagesFormat) whole(x *exchange, ev Event) any {
	y := *x
	y.opened = false
	f.closeBlock(f.event(nil, &y, Event{Tokens: ev.Total, Total: ev.Total, Done: true}, x.text, nil), x)
	m := f.message(x)
	m["stop_reason"] = stop(&y, ev)
	u := f.usage(x, ev)
	if u["input_tokens"] == nil {
		u["input_tokens"] = x.g.promptTokens
	}
	m["usage"] = u
	return m
}

func (f *messagesFormat) fail(b []byte, msg string) []byte {
	return f.put(b, "error", map[string]any{"error": map[string]any{"type": "api_error", "message": msg}})
}
