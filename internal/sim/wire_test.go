package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/netstat"
)

var update = flag.Bool("update", false, "rewrite the golden files")

type exchangeCase struct {
	name, engine, method, path, body string
}

var wireCases = []exchangeCase{
	{"completions-stream-usage", "vllm", "POST", "/v1/completions", `{"model":"tiny","prompt":"hello there world","max_tokens":4,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true},"temperature":0,"ignore_eos":true}`},
	{"completions-stream", "vllm", "POST", "/v1/completions", `{"prompt":"hello there world","max_tokens":3,"stream":true,"temperature":0}`},
	{"completions", "vllm", "POST", "/v1/completions", `{"prompt":"hello there world","max_tokens":3,"temperature":0}`},
	{"chat-stream-usage", "vllm", "POST", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hello"}],"max_tokens":3,"stream":true,"stream_options":{"include_usage":true},"temperature":0}`},
	{"chat", "vllm", "POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"hello"}]}],"max_completion_tokens":3,"temperature":0}`},
	{"models", "vllm", "GET", "/v1/models", ""},
	{"health", "vllm", "GET", "/health", ""},
	{"vllm-version", "vllm", "GET", "/version", ""},
	{"sglang-generate-stream", "sglang", "POST", "/generate", `{"text":"hello there world","sampling_params":{"max_new_tokens":3,"ignore_eos":true,"temperature":0},"stream":true}`},
	{"sglang-generate", "sglang", "POST", "/generate", `{"input_ids":[1,2,3],"sampling_params":{"max_new_tokens":3,"temperature":0}}`},
	{"sglang-server-info", "sglang", "GET", "/server_info", ""},
	{"sglang-model-info", "sglang", "GET", "/get_model_info", ""},
	{"tgi-generate-stream", "tgi", "POST", "/generate_stream", `{"inputs":"hello there world","parameters":{"max_new_tokens":3,"details":true}}`},
	{"tgi-generate", "tgi", "POST", "/generate", `{"inputs":"hello there world","parameters":{"max_new_tokens":3,"details":true}}`},
	{"tgi-info", "tgi", "GET", "/info", ""},
	{"llamacpp-completion-stream", "llamacpp", "POST", "/completion", `{"prompt":"hello there world","n_predict":3,"stream":true,"temperature":0}`},
	{"llamacpp-completion", "llamacpp", "POST", "/completion", `{"prompt":"hello there world","n_predict":3,"temperature":0}`},
	{"llamacpp-props", "llamacpp", "GET", "/props", ""},
	{"ollama-generate-stream", "ollama", "POST", "/api/generate", `{"model":"tiny","prompt":"hello there world","options":{"num_predict":3,"temperature":0}}`},
	{"ollama-chat-stream", "ollama", "POST", "/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"hello"}],"options":{"num_predict":3,"temperature":0}}`},
	{"ollama-chat", "ollama", "POST", "/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"hello"}],"stream":false,"options":{"num_predict":3,"temperature":0}}`},
	{"ollama-version", "ollama", "GET", "/api/version", ""},
	{"metrics-vllm", "vllm", "GET", "/metrics", ""},
	{"metrics-sglang", "sglang", "GET", "/metrics", ""},
	{"metrics-llamacpp", "llamacpp", "GET", "/metrics", ""},
	{"bad-json", "vllm", "POST", "/v1/completions", `{"prompt":`},
	{"wrong-model", "vllm", "POST", "/v1/completions", `{"model":"other","prompt":"x"}`},
	{"too-long", "vllm", "POST", "/v1/completions", `{"prompt":"x","max_tokens":100000}`},
}

// serveVirtual runs a profile's server in a synctest bubble on an in-memory
// network and calls fn with a client for it. Virtual time makes every
// timestamp and timing in the responses deterministic.
func serveVirtual(t *testing.T, p *Profile, fn func(c *http.Client, s *Server)) {
	serveVirtualWith(t, p, Options{Host: fixedHost}, nil, fn)
}

// fixedHost is a machine whose kernel counters hold still, for golden
// /metrics answers.
func fixedHost() (netstat.Counters, bool) { return netstat.Counters{Dropped: 3, Retrans: 5}, true }

// serveVirtualWith is serveVirtual with options, and setup called on the
// server before it serves.
func serveVirtualWith(t *testing.T, p *Profile, opt Options, setup func(*Server), fn func(c *http.Client, s *Server)) {
	serveVirtualNet(t, p, opt, setup, func(n *memnet.Net, s *Server) {
		tr := &http.Transport{DialContext: n.Dial}
		fn(&http.Client{Transport: tr}, s)
		tr.CloseIdleConnections()
	})
}

// serveVirtualNet is serveVirtualWith for tests that dial the in-memory
// network themselves.
func serveVirtualNet(t *testing.T, p *Profile, opt Options, setup func(*Server), fn func(n *memnet.Net, s *Server)) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		s := New(p, opt)
		if setup != nil {
			setup(s)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); s.Serve(ctx, n) }()
		fn(n, s)
		cancel()
		<-done
	})
}

func do(t *testing.T, c *http.Client, method, path, body string) (int, string, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://sim"+path, strings.NewReader(body))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

func withEngine(t *testing.T, engine string) *Profile {
	p := mustProfile(t, "tiny")
	p.Engine = engine
	return p
}

func TestWireGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range wireCases {
		t.Run(tc.name, func(t *testing.T) {
			var got []byte
			serveVirtual(t, withEngine(t, tc.engine), func(c *http.Client, _ *Server) {
				code, ct, body := do(t, c, tc.method, tc.path, tc.body)
				got = fmt.Appendf(nil, "HTTP %d\nContent-Type: %s\n\n%s", code, ct, body)
			})
			golden := filepath.Join("testdata", "wire", tc.name+".golden")
			if *update {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				os.WriteFile(golden, got, 0o644)
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s %s changed:\n--- got\n%s\n--- want\n%s", tc.method, tc.path, got, want)
			}
		})
	}
}

// keyPaths lists the JSON key paths of a value ("choices[].delta.content").
func keyPaths(v any, prefix string, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out[p] = true
			keyPaths(e, p, out)
		}
	case []any:
		for _, e := range x {
			keyPaths(e, prefix+"[]", out)
		}
	}
}

// eventShapes splits a stream into its JSON events (SSE data or NDJSON
// lines) and returns the key paths of the token events and of the last one.
func eventShapes(t *testing.T, body []byte) (events, last map[string]bool) {
	t.Helper()
	var objs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		line = strings.TrimSpace(strings.TrimPrefix(line, "data:"))
		if line == "" || line == "[DONE]" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		objs = append(objs, m)
	}
	if len(objs) < 2 {
		t.Fatalf("only %d events", len(objs))
	}
	events, last = map[string]bool{}, map[string]bool{}
	for _, o := range objs[:len(objs)-1] {
		keyPaths(o, "", events)
	}
	keyPaths(objs[len(objs)-1], "", last)
	return events, last
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The simulator's streams have the shape of the real servers' captures: it
// sends no field the real server does not, and every field a client reads.
func TestWireShapeMatchesRealCaptures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		capture, engine, path, body string
		needed                      []string // fields a client relies on
	}{
		{"ollama-generate.ndjson", "ollama", "/api/generate", `{"model":"tiny","prompt":"a b","options":{"num_predict":6}}`,
			[]string{"response", "done", "done_reason", "eval_count", "eval_duration", "prompt_eval_count"}},
		{"ollama-apichat.ndjson", "ollama", "/api/chat", `{"model":"tiny","messages":[{"role":"user","content":"a b"}],"options":{"num_predict":6}}`,
			[]string{"message.content", "done", "eval_count", "eval_duration"}},
		{"llama-native-completion.sse", "llamacpp", "/completion", `{"prompt":"a b","n_predict":6,"stream":true}`,
			[]string{"content", "tokens", "stop", "stop_type", "timings.predicted_n", "timings.predicted_ms", "timings.prompt_n"}},
		{"llama-completions-usage.sse", "llamacpp", "/v1/completions", `{"prompt":"a b","max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}`,
			[]string{"choices[].text", "choices[].finish_reason", "usage.completion_tokens"}},
		{"llama-chat.sse", "llamacpp", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a b"}],"max_tokens":6,"stream":true}`,
			[]string{"choices[].delta.content", "choices[].delta.role", "choices[].finish_reason"}},
		{"ollama-completions-usage.sse", "ollama", "/v1/completions", `{"prompt":"a b","max_tokens":6,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`,
			[]string{"choices[].text", "usage.completion_tokens", "usage.prompt_tokens"}},
	} {
		t.Run(tc.capture, func(t *testing.T) {
			real, err := os.ReadFile(filepath.Join("..", "..", "testdata", "wire", tc.capture))
			if err != nil {
				t.Fatalf("capture not available: %v", err)
			}
			realEvents, realLast := eventShapes(t, real)
			var body []byte
			serveVirtual(t, withEngine(t, tc.engine), func(c *http.Client, _ *Server) {
				_, _, body = do(t, c, "POST", tc.path, tc.body)
			})
			simEvents, simLast := eventShapes(t, body)
			for _, k := range sortedKeys(simEvents) {
				if !realEvents[k] && !realLast[k] {
					t.Errorf("simulator sends %q, the real server never does", k)
				}
			}
			for _, k := range sortedKeys(simLast) {
				if !realLast[k] && !realEvents[k] {
					t.Errorf("simulator's last event has %q, the real server's does not", k)
				}
			}
			all := map[string]bool{}
			for k := range simEvents {
				all[k] = true
			}
			for k := range simLast {
				all[k] = true
			}
			for _, k := range tc.needed {
				if !all[k] {
					t.Errorf("simulator never sends %q (have %v)", k, sortedKeys(all))
				}
			}
		})
	}
}
