package backend

import (
	"encoding/json"
	"fmt"
)

// Format is the structured output a run asks for (--response-format):
// any JSON object, or JSON that follows Schema. Each route that has a
// field for it gets it in its own shape; the zero value asks for none.
type Format struct {
	// Kind is "json" or "json_schema"; "" for none.
	Kind string
	// Name names the schema (the file's base name), as the OpenAI APIs
	// want one.
	Name   string
	Schema json.RawMessage
}

// chat is the chat and completions routes' response_format: {"type":
// "json_object"}, or {"type": "json_schema", "json_schema": {name,
// schema, strict}} (OpenAI's API reference; vLLM and SGLang read both).
func (f Format) chat() json.RawMessage {
	switch f.Kind {
	case "json":
		return json.RawMessage(`{"type":"json_object"}`)
	case "json_schema":
		return f.marshal(map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": f.Name, "schema": f.Schema, "strict": true}})
	}
	return nil
}

// responses is the Responses API's text.format: the same, flattened
// ({"type": "json_schema", name, schema, strict}).
func (f Format) responses() json.RawMessage {
	switch f.Kind {
	case "json":
		return json.RawMessage(`{"type":"json_object"}`)
	case "json_schema":
		return f.marshal(map[string]any{"type": "json_schema", "name": f.Name, "schema": f.Schema, "strict": true})
	}
	return nil
}

// messages is the Messages API's output_format, {"type": "json_schema",
// schema} (Anthropic's structured outputs); it has none for any JSON
// object, so "json" is refused there (Check).
func (f Format) messages() json.RawMessage {
	if f.Kind == "json_schema" {
		return f.marshal(map[string]any{"type": "json_schema", "schema": f.Schema})
	}
	return nil
}

func (f Format) marshal(v any) json.RawMessage {
	b, _ := json.Marshal(v) // a schema is valid JSON: checked when read
	return b
}

// Check says whether endpoint can send the format: the OpenAI routes
// and the Messages API's (a schema only) can; the engines' native routes
// are not sent one.
func (f Format) Check(endpoint string) error {
	switch {
	case f.Kind == "":
		return nil
	case endpoint == "chat", endpoint == "completions", endpoint == "responses":
		return nil
	case endpoint == "messages" && f.Kind == "json_schema":
		return nil
	case endpoint == "messages":
		return fmt.Errorf("--response-format json: the Messages API has no JSON mode without a schema; give json_schema:FILE")
	}
	return fmt.Errorf("--response-format is sent on the chat, completions, responses and messages endpoints, not on %s", endpoint)
}
