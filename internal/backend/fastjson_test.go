package backend

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
)

// Whatever the fast path accepts, encoding/json decodes to the same facts
// and does not call an error.
func FuzzFastChunk(f *testing.F) {
	for _, s := range []string{
		`{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" a","logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`,
		`{"choices":[{"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"choices":[],"usage":{"prompt_tokens":29,"completion_tokens":6,"prompt_tokens_details":{"cached_tokens":28}}}`,
		`{"choices":[{"delta":{"reasoning_content":" a b","content":" c"}}],"usage":{"prompt_tokens":2,"completion_tokens":3,"completion_tokens_details":{"reasoning_tokens":2}}}`,
		`{"choices":[],"usage":{"completion_tokens":9,"completion_tokens_details":null}}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0}]},"finish_reason":"tool_calls"}]}`,
		`{"Choices":[{"TEXT":"x"}],"usage":null}`,
		`{"choices":[{"text":"a\"b","finish_reason":"length"}]} `,
		`{"choices":null}`, `{"usage":{"completion_tokens":1.5}}`, `{"error":"x"}`, `[1]`, `{"a":{"b":[1,2,{"c":true}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fast, ok := fastChunk(in)
		if !ok {
			return
		}
		var c openAIChunk
		if err := json.Unmarshal(in, &c); err != nil {
			t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", err, in)
		}
		if c.Error != nil || c.Object == "error" || c.Timings != nil {
			t.Fatalf("fast path accepted an error or timings: %q", in)
		}
		if slow := c.facts(); slow != fast {
			t.Fatalf("facts differ for %q:\nfast %+v\nslow %+v", in, fast, slow)
		}
	})
}

// Every stream test gives the same records with and without the fast path.
//
// Serial: it switches the package's fastPath.
func TestFastPathSameRecords(t *testing.T) {
	inputs := []string{}
	for _, name := range []string{"ollama-chat.sse", "ollama-completions-usage.sse", "llama-chat-usage.sse", "llama-completions-usage.sse", "llama-completions-midstream-error.sse"} {
		if b, err := readCapture(name); err == nil {
			inputs = append(inputs, string(b))
		}
	}
	inputs = append(inputs, "data: {\"choices\":[{\"text\":\"a b c\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\ndata: {\"choices\":[{\"text\":\" d\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n")
	for i, in := range inputs {
		for _, chat := range []bool{false, true} {
			get := func(fast bool) record.Record {
				fastPath = fast
				defer func() { fastPath = true }()
				rec := record.New(0)
				readStream(&openAI{chat: chat}, strings.NewReader(in), record.NewClock(), &rec, nil)
				for j := range rec.Chunks {
					rec.Chunks[j].At = 0
				}
				rec.FirstToken, rec.LastToken, rec.FirstContent = 0, 0, 0
				return rec
			}
			a, b := get(true), get(false)
			if a.Status != b.Status || a.OutputTokens != b.OutputTokens || a.OutputSource != b.OutputSource || len(a.Chunks) != len(b.Chunks) ||
				a.FinishReason != b.FinishReason || a.PromptTokens != b.PromptTokens || a.CachedTokens != b.CachedTokens {
				t.Errorf("input %d chat %v: fast %+v\nslow %+v", i, chat, a, b)
			}
		}
	}
}
