package backend

import (
	"encoding/json"
	"fmt"

	"github.com/tokperf/tokperf/internal/record"
)

// Each route that has a field for structured output (--response-format)
// gets the run's record.ResponseFormat in its own shape; nil asks for
// none.

// chatFormat is the chat and completions routes' response_format:
// {"type": "json_object"}, or {"type": "json_schema", "json_schema":
// {name, schema, strict}} (OpenAI's API reference; vLLM and SGLang read
// both on both routes).
func chatFormat(f *record.ResponseFormat) json.RawMessage {
	switch {
	case f == nil:
		return nil
	case f.Type == "json":
		return json.RawMessage(`{"type":"json_object"}`)
	}
	return marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": f.Name, "schema": f.Schema, "strict": true}})
}

// responsesFormat is the Responses API's text.format: the same,
// flattened ({"type": "json_schema", name, schema, strict}).
func responsesFormat(f *record.ResponseFormat) json.RawMessage {
	switch {
	case f == nil:
		return nil
	case f.Type == "json":
		return json.RawMessage(`{"type":"json_object"}`)
	}
	return marshal(map[string]any{"type": "json_schema", "name": f.Name, "schema": f.Schema, "strict": true})
}

// messagesFormat is the Messages API's output_format, {"type":
// "json_schema", schema} (Anthropic's structured outputs); it has none
// for any JSON object, so "json" is refused there (checkFormat).
func messagesFormat(f *record.ResponseFormat) json.RawMessage {
	if f == nil || f.Type != "json_schema" {
		return nil
	}
	return marshal(map[string]any{"type": "json_schema", "schema": f.Schema})
}

func marshal(v any) json.RawMessage {
	b, _ := json.Marshal(v) // a schema is JSON: checked when it was read
	return b
}

// checkFormat says whether endpoint can send the format: the OpenAI
// routes can, and the Messages API a schema; the engines' native routes
// are sent none.
func checkFormat(f *record.ResponseFormat, endpoint string) error {
	switch {
	case f == nil:
		return nil
	case f.Type != "json" && f.Type != "json_schema":
		return fmt.Errorf("response format %q: want json or json_schema", f.Type)
	case endpoint == "chat", endpoint == "completions", endpoint == "responses":
		return nil
	case endpoint == "messages" && f.Type == "json_schema":
		return nil
	case endpoint == "messages":
		return fmt.Errorf("--response-format json: the Messages API has no JSON mode without a schema; give json_schema:FILE")
	}
	return fmt.Errorf("--response-format is sent on the chat, completions, responses and messages endpoints, not on %s", endpoint)
}
