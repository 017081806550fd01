package backend

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
)

// missingProtocols names what the engine table and the registered native
// protocols disagree on, each with the place to fix: an engine the table
// says is native with no protocol registered, a protocol registered for an
// engine the table does not know or says is not native.
func missingProtocols(table []engine.Engine, natives map[string]newProtocol) []string {
	var out []string
	known := map[string]bool{}
	for _, e := range table {
		known[e.Name] = true
		_, registered := natives[e.Name]
		switch {
		case e.Native && !registered:
			out = append(out, fmt.Sprintf("engine %q: internal/engine's table says it is native and no protocol is registered: add internal/backend/%s.go implementing protocol, with init() { natives[%q] = … }", e.Name, e.Name, e.Name))
		case !e.Native && registered:
			out = append(out, fmt.Sprintf("engine %q: a protocol is registered in natives and internal/engine's table says it is not native: set Native there", e.Name))
		}
	}
	for name := range natives {
		if !known[name] {
			out = append(out, fmt.Sprintf("a protocol is registered for %q, which internal/engine's table does not know: add its entry there", name))
		}
	}
	return out
}

// The engine table and the protocols agree, and every engine's default
// endpoint makes a backend.
func TestEngineTableMatchesProtocols(t *testing.T) {
	t.Parallel()
	for _, msg := range missingProtocols(engine.Table(), natives) {
		t.Error(msg)
	}
	for _, e := range engine.Table() {
		if _, err := New(Config{URL: "http://127.0.0.1:1", Endpoint: engine.DefaultEndpoint(e.Name), Engine: e.Name}); err != nil {
			t.Errorf("%s: its default endpoint %s: %v", e.Name, engine.DefaultEndpoint(e.Name), err)
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

// A stream cut without its finish on an Ollama server's OpenAI route,
// whose text is not read, names Ollama's repeat limit as the likely cause
// (its native protocol's endsEarly); on another engine's it does not.
func TestEndsEarlyOnOtherRoutes(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write([]byte("data: {\"choices\":[{\"text\":\" ash\"}]}\n\n"))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		engine string
		hint   bool
	}{{"ollama", true}, {"vllm", false}} {
		b, err := New(Config{URL: srv.URL, Endpoint: "completions", Engine: tc.engine})
		if err != nil {
			t.Fatal(err)
		}
		rec := record.New(0)
		b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 4}, &rec)
		if rec.Status != record.StatusIncomplete || strings.Contains(rec.Error, "Ollama stops a stream") != tc.hint {
			t.Errorf("%s: %s %q, want incomplete with the repeat limit named: %v", tc.engine, rec.Status, rec.Error, tc.hint)
		}
		b.Close()
	}
}
