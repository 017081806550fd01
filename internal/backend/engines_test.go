package backend

import (
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
)

// The engine table and the protocols agree: every engine the table says
// has a native endpoint has a protocol registered under its name, and no
// protocol is registered for an engine the table does not know.
func TestEngineTableMatchesProtocols(t *testing.T) {
	t.Parallel()
	for _, e := range engine.Table() {
		_, registered := natives[e.Name]
		if e.Native != registered {
			t.Errorf("%s: the table says native %v, a protocol is registered: %v", e.Name, e.Native, registered)
		}
		if _, err := New(Config{URL: "http://127.0.0.1:1", Endpoint: engine.DefaultEndpoint(e.Name), Engine: e.Name}); err != nil {
			t.Errorf("%s: its default endpoint %s: %v", e.Name, engine.DefaultEndpoint(e.Name), err)
		}
	}
	for name := range natives {
		if _, ok := engine.Lookup(name); !ok {
			t.Errorf("a protocol is registered for %q, which the engine table does not know", name)
		}
	}
}

// llama.cpp's OpenAI routes get cache_prompt as its native route does, so
// the chat side of an overhead comparison is not served from the cache
// the raw side turned off; other engines get no such field.
func TestCachePromptOnEveryLlamaRoute(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		engine, endpoint string
		want             string
	}{
		{"llamacpp", "chat", `"cache_prompt":false`},
		{"llamacpp", "completions", `"cache_prompt":false`},
		{"llamacpp", "generate", `"cache_prompt":false`},
		{"vllm", "chat", ""},
	} {
		b, err := New(Config{URL: "http://127.0.0.1:1", Endpoint: tc.endpoint, Engine: tc.engine})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := b.proto.body(&b.cfg, &record.Request{Prompt: "x", MaxTokens: 1})
		if got := strings.Contains(string(body), "cache_prompt"); got != (tc.want != "") || (tc.want != "" && !strings.Contains(string(body), tc.want)) {
			t.Errorf("%s %s: %s", tc.engine, tc.endpoint, body)
		}
	}
}

// --usage final asks for the final usage only: no count on every chunk.
func TestUsageFinal(t *testing.T) {
	t.Parallel()
	for _, final := range []bool{false, true} {
		b, err := New(Config{URL: "http://127.0.0.1:1", Endpoint: "completions", UsageFinal: final})
		if err != nil {
			t.Fatal(err)
		}
		body, _ := b.proto.body(&b.cfg, &record.Request{Prompt: "x", MaxTokens: 1})
		if got := strings.Contains(string(body), `"continuous_usage_stats":true`); got == final || !strings.Contains(string(body), `"include_usage":true`) {
			t.Errorf("final %v: %s", final, body)
		}
	}
}
