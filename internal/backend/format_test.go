package backend

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
)

// --response-format goes in each route's own field and shape; the routes
// with none, and JSON mode on the Messages API (which has only schemas),
// are refused before anything is sent.
func TestResponseFormatBodies(t *testing.T) {
	t.Parallel()
	schema := &record.ResponseFormat{Type: "json_schema", Name: "order", Schema: json.RawMessage(`{"type":"object","required":["id"]}`)}
	jsonMode := &record.ResponseFormat{Type: "json"}
	for _, tc := range []struct {
		endpoint string
		f        *record.ResponseFormat
		field    string // the body's field, as a path
		want     string
	}{
		{"chat", schema, "response_format", `{"json_schema":{"name":"order","schema":{"type":"object","required":["id"]},"strict":true},"type":"json_schema"}`},
		{"chat", jsonMode, "response_format", `{"type":"json_object"}`},
		{"completions", schema, "response_format", `{"json_schema":{"name":"order","schema":{"type":"object","required":["id"]},"strict":true},"type":"json_schema"}`},
		{"responses", schema, "text", `{"format":{"name":"order","schema":{"type":"object","required":["id"]},"strict":true,"type":"json_schema"}}`},
		{"responses", jsonMode, "text", `{"format":{"type":"json_object"}}`},
		{"messages", schema, "output_format", `{"schema":{"type":"object","required":["id"]},"type":"json_schema"}`},
		{"chat", nil, "response_format", ``},
	} {
		b, err := New(Config{URL: "http://127.0.0.1:1", Endpoint: tc.endpoint, Model: "m", Format: tc.f})
		if err != nil {
			t.Fatalf("%s: %v", tc.endpoint, err)
		}
		body, err := b.proto.body(&b.cfg, &record.Request{Prompt: "x", MaxTokens: 4})
		b.Close()
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			t.Fatal(err)
		}
		if got := string(fields[tc.field]); got != tc.want {
			t.Errorf("%s %v: %s = %s, want %s", tc.endpoint, tc.f, tc.field, got, tc.want)
		}
	}
	for _, tc := range []struct {
		endpoint string
		f        *record.ResponseFormat
		want     string
	}{
		{"messages", jsonMode, "no JSON mode without a schema"},
		{"generate", schema, "not on generate"},
		{"api-chat", jsonMode, "not on api-chat"},
	} {
		_, err := New(Config{URL: "http://127.0.0.1:1", Endpoint: tc.endpoint, Engine: "ollama", Format: tc.f})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s with %v: %v, want an error saying %q", tc.endpoint, tc.f.Type, err, tc.want)
		}
	}
}

// A conversation with a tool call and its result goes to the Responses
// API as function_call and function_call_output items, and to the
// Messages API with its system apart, the call a tool_use block (its
// arguments an object) and the result a user turn's tool_result, and to
// Ollama's /api/chat with the arguments an object; chat tools become each
// API's tool shape.
func TestAgentTurnBodies(t *testing.T) {
	t.Parallel()
	req := &record.Request{MaxTokens: 9, Messages: []record.Message{
		{Role: "system", Content: "be brief"},
		{Role: "user", Content: "weather in Paris?"},
		{Role: "assistant", Raw: json.RawMessage(`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}`)},
		{Role: "tool", Content: "18C", Raw: json.RawMessage(`{"role":"tool","tool_call_id":"c1","content":"18C"}`)},
	}, Tools: json.RawMessage(`[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object"}}}]`)}
	for _, tc := range []struct {
		p    protocol
		want string
	}{
		{responses{}, `{"model":"m","input":[{"content":"be brief","role":"system","type":"message"},{"content":"weather in Paris?","role":"user","type":"message"},` +
			`{"arguments":"{\"city\":\"Paris\"}","call_id":"c1","name":"get_weather","type":"function_call"},{"call_id":"c1","output":"18C","type":"function_call_output"}],` +
			`"max_output_tokens":9,"stream":true,"temperature":0,"tools":[{"description":"d","name":"get_weather","parameters":{"type":"object"},"type":"function"}]}`},
		{messages{}, `{"model":"m","max_tokens":9,"system":"be brief","messages":[{"role":"user","content":"weather in Paris?"},` +
			`{"role":"assistant","content":[{"id":"c1","input":{"city":"Paris"},"name":"get_weather","type":"tool_use"}]},` +
			`{"role":"user","content":[{"content":"18C","tool_use_id":"c1","type":"tool_result"}]}],"stream":true,"temperature":0,` +
			`"tools":[{"description":"d","input_schema":{"type":"object"},"name":"get_weather"}]}`},
		{ollama{chat: true}, `{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"weather in Paris?"},` +
			`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},{"role":"tool","content":"18C"}],` +
			`"tools":[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object"}}}],"stream":true,"options":{"num_predict":9,"temperature":0}}`},
	} {
		b, err := tc.p.body(&Config{Model: "m"}, req)
		if err != nil || string(b) != tc.want {
			t.Errorf("%T: %s (%v)\nwant %s", tc.p, b, err, tc.want)
		}
	}
}
