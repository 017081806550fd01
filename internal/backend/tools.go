package backend

import (
	"encoding/json"
	"fmt"

	"github.com/tokperf/tokperf/internal/record"
)

// calls joins a response's streamed tool-call fragments into its record:
// each call is keyed by what the protocol numbers it with (the OpenAI
// delta's index, the Responses API's output_index, the Messages API's
// content block index); the first fragment of a key opens the call, and
// later ones add their id or name where it was still empty and append
// their argument text. A provider that sends a whole call in one chunk
// is one fragment.
type calls struct{ at map[int]int }

func (c *calls) add(rec *record.Record, key int, id, name, args string) {
	if c.at == nil {
		c.at = map[int]int{}
	}
	i, ok := c.at[key]
	if !ok {
		i = len(rec.ToolCalls)
		c.at[key] = i
		rec.ToolCalls = append(rec.ToolCalls, record.ToolCall{})
	}
	tc := &rec.ToolCalls[i]
	if tc.ID == "" {
		tc.ID = id
	}
	if tc.Name == "" {
		tc.Name = name
	}
	tc.Arguments += args
}

// toolDelta is one fragment of a chat stream's delta.tool_calls.
type toolDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// addDeltas adds a chat delta's tool_calls to the record. A fragment
// without an index is numbered by its place in the list; arguments sent
// as a JSON object, not a string, are kept as their JSON text. A list that
// does not decode adds nothing (its chunk still counts as a tool call's).
func (c *calls) addDeltas(rec *record.Record, raw json.RawMessage) {
	var ds []toolDelta
	if json.Unmarshal(raw, &ds) != nil {
		return
	}
	for i, d := range ds {
		key := i
		if d.Index != nil {
			key = *d.Index
		}
		c.add(rec, key, d.ID, d.Function.Name, argText(d.Function.Arguments))
	}
}

// argText is arguments as text: a JSON string's value, else the JSON
// itself (an object), "" for none.
func argText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// turn is one message of a conversation as the Responses and Messages
// APIs need it: its text, and the tool calls an assistant turn made or
// the call a tool turn answers (read from the chat message's raw JSON,
// where the dataset or the session wrote them).
type turn struct {
	role, content string
	callID        string // role "tool": the call it answers (tool_call_id)
	calls         []record.ToolCall
}

// turns is the request's conversation: its messages, or its prompt as
// one user turn.
func turns(req *record.Request) []turn {
	if len(req.Messages) == 0 {
		return []turn{{role: "user", content: req.Prompt}}
	}
	out := make([]turn, 0, len(req.Messages))
	for _, m := range req.Messages {
		t := turn{role: m.Role, content: m.Content}
		var raw struct {
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		}
		if m.Raw != nil && json.Unmarshal(m.Raw, &raw) == nil {
			t.callID = raw.ToolCallID
			for _, c := range raw.ToolCalls {
				t.calls = append(t.calls, record.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: argText(c.Function.Arguments)})
			}
		}
		out = append(out, t)
	}
	return out
}

// chatTool is a tool of the chat route's "tools" array.
type chatTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// chatTools reads the request's tools (the chat route's shape); an array
// that does not read is an error naming it.
func chatTools(raw json.RawMessage) ([]chatTool, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var ts []chatTool
	if err := json.Unmarshal(raw, &ts); err != nil {
		return nil, fmt.Errorf("the request's tools are not a list of chat tools ({\"type\":\"function\",\"function\":{…}}): %v", err)
	}
	return ts, nil
}

// jsonObject is args as a JSON object for a route that wants one (the
// Messages API's tool_use input): the arguments when they are one, else
// {} (a call cut short has no whole object to send back).
func jsonObject(args string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &m) != nil || m == nil {
		return json.RawMessage("{}")
	}
	return json.RawMessage(args)
}
