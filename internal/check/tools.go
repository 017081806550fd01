package check

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tokperf/tokperf/internal/record"
)

// checkTools are the tools the tool-call item offers: two, each with a
// required property, so that a call must name one that was sent and
// fill what its schema requires.
const checkTools = `[{"type":"function","function":{"name":"get_weather","description":"The current weather in a city.",` +
	`"parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}}},` +
	`{"type":"function","function":{"name":"get_time","description":"The local time in a time zone.",` +
	`"parameters":{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}}}]`

// toolItem asks for a call of one of checkTools.
func toolItem() Item {
	return Item{Kind: "tools", Prompt: "What is the weather in Paris right now? Call the get_weather tool.", Tools: json.RawMessage(checkTools)}
}

// ToolCalls is the tool-call check: the calls the server answered the
// tool item with, and what is wrong with them. A server that answered
// with text made no call to judge (Answered says so): not a failure, as
// the tools are offered, not required.
type ToolCalls struct {
	Calls    []record.ToolCall `json:"calls,omitempty"`
	Problems []string          `json:"problems,omitempty"`
	// NotJudged says why no call was judged: the request failed, or the
	// answer was text (an endpoint that sends no tools, or a model that
	// chose not to call).
	NotJudged string `json:"not_judged,omitempty"`
}

// Passed reports whether every call parsed against the tools sent.
func (t *ToolCalls) Passed() bool { return len(t.Problems) == 0 }

// judgeTools judges the tool item's record against the tools it sent;
// a call that does not parse against them fails the check.
func (res *Result) judgeTools(it Item, rec *record.Record) {
	tc := &ToolCalls{Calls: rec.ToolCalls}
	switch {
	case !rec.OK():
		tc.NotJudged = fmt.Sprintf("the request %s: %s", rec.Status, rec.Error)
	case len(rec.ToolCalls) == 0:
		tc.NotJudged = "the server answered with text, not a call (tools are sent on the chat, responses and messages endpoints)"
	default:
		tc.Problems = ToolProblems(it.Tools, rec.ToolCalls)
	}
	res.ToolCalls = tc
	if !tc.Passed() {
		res.Passed = false
		res.Failures = append(res.Failures, "tool calls: "+strings.Join(tc.Problems, "; "))
	}
}

// ToolProblems says what is wrong with calls made against tools (the
// chat route's "tools" array): each call must name a tool that was sent,
// and its arguments must be a JSON object holding every property the
// tool's parameters require. Nil when all is well.
func ToolProblems(tools json.RawMessage, calls []record.ToolCall) []string {
	var sent []struct {
		Function struct {
			Name       string `json:"name"`
			Parameters struct {
				Required []string `json:"required"`
			} `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(tools, &sent); err != nil {
		return []string{fmt.Sprintf("the tools sent do not read: %v", err)}
	}
	required := map[string][]string{}
	for _, t := range sent {
		required[t.Function.Name] = t.Function.Parameters.Required
	}
	var out []string
	for i, c := range calls {
		req, ok := required[c.Name]
		if !ok {
			out = append(out, fmt.Sprintf("call %d names %q, a tool that was not sent", i+1, c.Name))
			continue
		}
		var args map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil || args == nil {
			out = append(out, fmt.Sprintf("call %d (%s): its arguments are not a JSON object: %.80q", i+1, c.Name, c.Arguments))
			continue
		}
		for _, k := range req {
			if _, ok := args[k]; !ok {
				out = append(out, fmt.Sprintf("call %d (%s): its arguments lack the required %q", i+1, c.Name, k))
			}
		}
	}
	return out
}
