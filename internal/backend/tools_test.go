package backend

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tokperf/tokperf/internal/record"
)

// tickClock is a stamper whose every reading is 1 ms after the one
// before, so each event of a stream has its own arrival.
type tickClock struct{ now time.Duration }

func (c *tickClock) Now() time.Duration { c.now += time.Millisecond; return c.now }

// Streamed tool calls are joined by their index: two calls of one
// response, fragments without an index, a call sent whole in one chunk,
// arguments sent as an object; the first tool-call delta is the first
// content (TTFO), and the chunks that carried only calls are tool tokens.
func TestOpenAIToolCalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in  string
		want      []record.ToolCall
		tokens    int
		firstCall int // the event, from 1, of the first content
	}{
		{"two calls interleaved",
			`{"choices":[{"delta":{"reasoning_content":"hm"}}]}` + "\n\n" +
				`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"get","arguments":""}}]}}]}` + "\n\n" +
				`{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"put","arguments":"{\"k\""}}]}}]}` + "\n\n" +
				`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"","function":{"arguments":"{}"}}]}}]}` + "\n\n" +
				`{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":":1}"}}]},"finish_reason":"tool_calls"}]}`,
			[]record.ToolCall{{ID: "a", Name: "get", Arguments: "{}"}, {ID: "b", Name: "put", Arguments: `{"k":1}`}}, 4, 2},
		{"whole call in one chunk, no index",
			`{"choices":[{"delta":{"tool_calls":[{"id":"x","function":{"name":"w","arguments":"{\"a\":1}"}},{"id":"y","function":{"name":"v","arguments":{"b":2}}}]},"finish_reason":"tool_calls"}]}`,
			[]record.ToolCall{{ID: "x", Name: "w", Arguments: `{"a":1}`}, {ID: "y", Name: "v", Arguments: `{"b":2}`}}, 1, 1},
		{"content then a call",
			`{"choices":[{"delta":{"content":"Let me look."}}]}` + "\n\n" +
				`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`,
			[]record.ToolCall{{ID: "c", Name: "f", Arguments: "{}"}}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := "data: " + strings.ReplaceAll(tc.in, "\n\n", "\n\ndata: ") + "\n\ndata: [DONE]\n\n"
			for _, fast := range []bool{true, false} {
				rec := record.New(0)
				s := &stream{clock: &tickClock{}, rec: &rec}
				if !fast {
					s.text = &strings.Builder{} // the slow path for every chunk
				}
				s.read(&openAI{chat: true}, strings.NewReader(in))
				if rec.Status != record.StatusOK || rec.FinishReason != "tool_calls" {
					t.Fatalf("status %q (%s), finish %q", rec.Status, rec.Error, rec.FinishReason)
				}
				if diff := cmp.Diff(tc.want, rec.ToolCalls); diff != "" {
					t.Errorf("calls (-want +got):\n%s", diff)
				}
				if rec.ToolTokens != tc.tokens || rec.ToolSource != record.SourceChunks {
					t.Errorf("%d tool tokens (%s), want %d (chunks)", rec.ToolTokens, rec.ToolSource, tc.tokens)
				}
				if want := time.Duration(tc.firstCall) * time.Millisecond; rec.FirstContent != want {
					t.Errorf("first content at %v, want %v (event %d)", rec.FirstContent, want, tc.firstCall)
				}
			}
		})
	}
}

// Ollama's /api/chat sends each tool call whole, its arguments an object,
// in a line after the tokens that made it: the calls are kept, and their
// tokens are the server's eval_count less the lines of text and
// thinking; the call's line is the first content.
func TestOllamaToolCalls(t *testing.T) {
	t.Parallel()
	in := `{"message":{"role":"assistant","content":"","thinking":"hm"},"done":false}
{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"get_weather","arguments":{"city":"Paris"}}},{"id":"call_2","function":{"index":1,"name":"get_time","arguments":{"timezone":"UTC"}}}]},"done":false}
{"message":{"role":"assistant","content":""},"done":true,"done_reason":"stop","prompt_eval_count":40,"eval_count":23}
`
	rec := record.New(0)
	s := &stream{clock: &tickClock{}, rec: &rec}
	s.read(ollama{chat: true}, strings.NewReader(in))
	want := []record.ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris"}`}, {ID: "call_2", Name: "get_time", Arguments: `{"timezone":"UTC"}`}}
	if diff := cmp.Diff(want, rec.ToolCalls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if rec.Status != record.StatusOK || rec.ToolTokens != 22 || rec.ToolSource != record.SourceUsage || rec.OutputTokens != 23 || rec.FirstContent != 2*time.Millisecond {
		t.Errorf("status %s, %d tool tokens (%s) of %d, first content %v; want 22 (usage) of 23 at 2ms", rec.Status, rec.ToolTokens, rec.ToolSource, rec.OutputTokens, rec.FirstContent)
	}
}

// FuzzAPIStreams: whatever a Responses, Messages or Ollama chat stream
// holds, reading it never panics, always ends with a status, and every
// tool call it keeps came from the stream (no more calls than events).
func FuzzAPIStreams(f *testing.F) {
	for _, name := range []string{"openai-responses-reasoning-tool-call.sse", "anthropic-messages-tool-call.sse", "anthropic-messages-thinking.sse", "ollama-apichat.ndjson"} {
		b, err := readCapture(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, p := range []protocol{responses{}, messages{}, ollama{chat: true}} {
			rec := record.New(0)
			s := &stream{clock: &tickClock{}, rec: &rec}
			s.read(p, bytes.NewReader(in))
			if rec.Status == "" {
				t.Fatalf("%T: no status", p)
			}
			if len(rec.ToolCalls) > s.events {
				t.Fatalf("%T: %d calls from %d events", p, len(rec.ToolCalls), s.events)
			}
		}
	})
}
