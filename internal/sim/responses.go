package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// The OpenAI Responses API (POST /v1/responses), as OpenAI documents it
// and vLLM and SGLang serve it: input as a string or a list of items,
// max_output_tokens, and a stream of typed events, each written as
// "event: TYPE" and "data: {"type": TYPE, "sequence_number": n, …}":
// response.created and response.in_progress, then per output item
// (reasoning, message, function_call) output_item.added, its deltas
// (response.reasoning_text.delta, response.output_text.delta,
// response.function_call_arguments.delta) and its done events, and last
// response.completed (or response.incomplete at max_output_tokens) with
// the usage: input_tokens (input_tokens_details.cached_tokens),
// output_tokens (output_tokens_details.reasoning_tokens).

type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    string          `json:"instructions"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Stream          bool            `json:"stream"`
	Temperature     *float64        `json:"temperature"`
	Seed            *int64          `json:"seed"`
	IgnoreEOS       bool            `json:"ignore_eos"` // vLLM's extension, as on its other routes
	Tools           []toolSpec      `json:"tools"`
	ToolChoice      json.RawMessage `json:"tool_choice"`
}

// inputItem is one item of a Responses input list: a message (content a
// string or parts), a function call, or a call's output.
type inputItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// messages reads the input into the conversation the template sees.
func (req *responsesRequest) messages() ([]message, error) {
	var msgs []message
	if req.Instructions != "" {
		msgs = append(msgs, message{"system", req.Instructions})
	}
	var one string
	if json.Unmarshal(req.Input, &one) == nil {
		return append(msgs, message{"user", one}), nil
	}
	var items []inputItem
	if err := json.Unmarshal(req.Input, &items); err != nil || len(items) == 0 {
		return nil, fmt.Errorf("input must be a string or a list of items")
	}
	for i, it := range items {
		switch it.Type {
		case "function_call":
			msgs = append(msgs, message{"assistant", it.Arguments})
		case "function_call_output":
			t, err := chatMessage{Content: it.Output}.text()
			if err != nil {
				return nil, fmt.Errorf("input[%d].output: %v", i, err)
			}
			msgs = append(msgs, message{"tool", t})
		case "", "message":
			t, err := chatMessage{Content: it.Content}.text()
			if err != nil {
				return nil, fmt.Errorf("input[%d]: %v", i, err)
			}
			msgs = append(msgs, message{it.Role, t})
		default:
			return nil, fmt.Errorf("input[%d]: item type %q is not one the simulator reads", i, it.Type)
		}
	}
	return msgs, nil
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	if s.absent(w, r) {
		return
	}
	var req responsesRequest
	if err := decodeBody(r, &req); err != nil {
		openAIError(w, 400, err.Error())
		return
	}
	if req.Model != "" && req.Model != s.p.Model {
		openAIError(w, 404, fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return
	}
	msgs, err := req.messages()
	if err != nil {
		openAIError(w, 400, err.Error())
		return
	}
	g := &gen{route: r.URL.Path, stream: req.Stream, ignoreEOS: req.IgnoreEOS, temperature: 1, chat: true}
	s.chatPrompt(g, msgs)
	g.maxTokens = max(s.p.ContextLength-g.promptTokens, 0)
	if req.MaxOutputTokens != nil {
		g.maxTokens = *req.MaxOutputTokens
	}
	if req.Temperature != nil {
		g.temperature = *req.Temperature
	}
	if req.Seed != nil {
		g.seed = *req.Seed
	}
	g.tools, g.choice = offers(req.Tools), readChoice(req.ToolChoice)
	s.serve(w, r, g, &responsesFormat{s: s})
}

// responsesFormat writes one response's events; it keeps the output item
// being streamed and the finished ones.
type responsesFormat struct {
	s    *Server
	seq  int
	open string // the type of the item being streamed, "" for none
	text strings.Builder
	done []map[string]any // the finished output items
}

func (f *responsesFormat) contentType() string { return "text/event-stream" }

// put writes one event, numbered.
func (f *responsesFormat) put(b []byte, typ string, v map[string]any) []byte {
	v["type"], v["sequence_number"] = typ, f.seq
	f.seq++
	j, _ := json.Marshal(v)
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: "...)
	b = append(b, j...)
	return append(b, '\n', '\n')
}

// response is the response object the first and last events carry.
func (f *responsesFormat) response(x *exchange, status string, ev *Event) map[string]any {
	out := f.done
	if out == nil {
		out = []map[string]any{}
	}
	resp := map[string]any{"id": "resp_" + x.id, "object": "response", "created_at": x.created, "status": status,
		"model": f.s.p.Model, "output": out, "usage": nil}
	if ev == nil {
		return resp
	}
	if status == "incomplete" {
		resp["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
	}
	if !f.s.p.Wire.OmitUsage {
		resp["usage"] = map[string]any{"input_tokens": x.g.promptTokens, "input_tokens_details": map[string]any{"cached_tokens": x.cached},
			"output_tokens": ev.Total, "output_tokens_details": map[string]any{"reasoning_tokens": f.s.reasoned(x.g, ev.Total)},
			"total_tokens": x.g.promptTokens + ev.Total}
	}
	return resp
}

func (f *responsesFormat) begin(b []byte, x *exchange) []byte {
	b = f.put(b, "response.created", map[string]any{"response": f.response(x, "in_progress", nil)})
	return f.put(b, "response.in_progress", map[string]any{"response": f.response(x, "in_progress", nil)})
}

// item is the output item of kind being streamed, as added or, with its
// text, done.
func (f *responsesFormat) item(x *exchange, kind string, done bool) map[string]any {
	status, text := "in_progress", ""
	if done {
		status, text = "completed", f.text.String()
	}
	it := map[string]any{"type": kind, "id": itemID(kind, x), "status": status}
	switch kind {
	case "reasoning":
		it["summary"] = []any{}
		it["content"] = []any{map[string]any{"type": "reasoning_text", "text": text}}
	case "message":
		it["role"] = "assistant"
		it["content"] = []any{}
		if done {
			it["content"] = []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}
		}
	case "function_call":
		it["call_id"], it["name"], it["arguments"] = "call_"+x.id, x.g.tool, text
	}
	return it
}

// switchTo closes the item being streamed, if it is not of kind, and
// opens one of kind.
func (f *responsesFormat) switchTo(b []byte, x *exchange, kind string) []byte {
	if f.open == kind {
		return b
	}
	b = f.closeItem(b, x)
	f.open = kind
	b = f.put(b, "response.output_item.added", map[string]any{"output_index": len(f.done), "item": f.item(x, kind, false)})
	if kind == "message" {
		b = f.put(b, "response.content_part.added", map[string]any{"item_id": itemID("message", x), "output_index": len(f.done),
			"content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
	}
	return b
}

// closeItem writes the done events of the item being streamed.
func (f *responsesFormat) closeItem(b []byte, x *exchange) []byte {
	if f.open == "" {
		return b
	}
	at, id, text := len(f.done), itemID(f.open, x), f.text.String()
	switch f.open {
	case "reasoning":
		b = f.put(b, "response.reasoning_text.done", map[string]any{"item_id": id, "output_index": at, "content_index": 0, "text": text})
	case "message":
		b = f.put(b, "response.output_text.done", map[string]any{"item_id": id, "output_index": at, "content_index": 0, "text": text})
		b = f.put(b, "response.content_part.done", map[string]any{"item_id": id, "output_index": at, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
	case "function_call":
		b = f.put(b, "response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": at, "arguments": text})
	}
	it := f.item(x, f.open, true)
	b = f.put(b, "response.output_item.done", map[string]any{"output_index": at, "item": it})
	f.done = append(f.done, it)
	f.open = ""
	f.text.Reset()
	return b
}

func (f *responsesFormat) event(b []byte, x *exchange, ev Event, text []byte, _ []int) []byte {
	p := f.s.cut(x, ev, text)
	if p.thinking != "" {
		b = f.switchTo(b, x, "reasoning")
		b = f.delta(b, x, "response.reasoning_text.delta", p.thinking)
	}
	if p.rest != "" {
		if x.g.tool != "" {
			b = f.switchTo(b, x, "function_call")
			b = f.delta(b, x, "response.function_call_arguments.delta", p.rest)
		} else {
			b = f.switchTo(b, x, "message")
			b = f.delta(b, x, "response.output_text.delta", p.rest)
		}
	}
	return b
}

// delta writes one delta of the item being streamed.
func (f *responsesFormat) delta(b []byte, x *exchange, typ, text string) []byte {
	f.text.WriteString(text)
	v := map[string]any{"item_id": itemID(f.open, x), "output_index": len(f.done), "delta": text}
	if f.open != "function_call" {
		v["content_index"] = 0
	}
	return f.put(b, typ, v)
}

func (f *responsesFormat) end(b []byte, x *exchange, ev Event) []byte {
	b = f.closeItem(b, x)
	if ev.Finish == "length" && !x.opened {
		return f.put(b, "response.incomplete", map[string]any{"response": f.response(x, "incomplete", &ev)})
	}
	return f.put(b, "response.completed", map[string]any{"response": f.response(x, "completed", &ev)})
}

func (f *responsesFormat) whole(x *exchange, ev Event) any {
	y := *x
	y.opened = false
	b := f.event(nil, &y, Event{Tokens: ev.Total, Total: ev.Total, Done: true}, x.text, nil)
	f.closeItem(b, x)
	status := "completed"
	if ev.Finish == "length" && !y.opened {
		status = "incomplete"
	}
	return f.response(x, status, &ev)
}

func (f *responsesFormat) fail(b []byte, msg string) []byte {
	return f.put(b, "error", map[string]any{"code": "server_error", "message": msg, "param": nil})
}

// itemID is an output item's id, prefixed as OpenAI's are.
func itemID(kind string, x *exchange) string {
	return map[string]string{"reasoning": "rs_", "message": "msg_", "function_call": "fc_"}[kind] + x.id
}

// apiRoutes are the generation routes an OpenAPI document lists and
// wire.no_routes may take away.
var apiRoutes = []string{"/v1/completions", "/v1/chat/completions", "/v1/responses", "/v1/messages"}

// absent answers 404 for a route the profile took away (wire.no_routes),
// and says whether it did.
func (s *Server) absent(w http.ResponseWriter, r *http.Request) bool {
	if slices.Contains(s.p.Wire.NoRoutes, r.URL.Path) {
		http.NotFound(w, r)
		return true
	}
	return false
}

// openAPI is the OpenAPI document FastAPI servers (vLLM, SGLang) publish
// at /openapi.json, reduced to its paths: the generation routes the
// simulator serves, with the methods, as a client reads which exist.
// wire.no_routes leaves some out, as an older server has none of them.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	paths := map[string]any{}
	for _, p := range apiRoutes {
		if !slices.Contains(s.p.Wire.NoRoutes, p) {
			paths[p] = map[string]any{"post": map[string]any{"summary": p}}
		}
	}
	writeJSON(w, 200, map[string]any{"openapi": "3.1.0", "info": map[string]any{"title": "FastAPI", "version": "0.1.0"}, "paths": paths})
}
