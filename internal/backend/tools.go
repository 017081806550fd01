package backend

import (
	"encoding/json"

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
