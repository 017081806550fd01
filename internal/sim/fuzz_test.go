package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func FuzzParseProfile(f *testing.F) {
	files, _ := filepath.Glob("profiles/*.yaml")
	for _, p := range files {
		b, _ := os.ReadFile(p)
		f.Add(b)
	}
	f.Add([]byte("name: x\ndecode: {table: [{batch: 1, step_ms: 1}]}\nprefill: {per_token_us: 1}\n"))
	// Near the inputs that crashed or exhausted the YAML library: a tag
	// one deletion away from having no value, aliases, deep nesting.
	f.Add([]byte("name: x\ndecode:\n  table: !t x\n"))
	f.Add([]byte("name: !t x\ndecode:\n  table:\n    - batch: !t 1\n"))
	f.Add([]byte("a: &a [1,1]\nb: &b [*a,*a]\nname: x\n"))
	f.Add([]byte("decode: {table: [[[[[[[[{batch: 1}]]]]]]]]}\n"))
	f.Add([]byte("decode:\n  table:\n    - batch: 1\n      step_ms: .inf\n"))
	f.Add([]byte("name: x\ndecode: {linear: {a_ms: 1}}\nprefill: {per_token_us: 1}\ndegrade: {step_growth_pct_per_h: 10, slowdown_at_s: 60, slowdown_factor: 2, stall_every_s: 5, stall_s: 0.1, kv_leak_tokens_per_min: 9, resident_gb: 1, resident_gb_per_h: 1}\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		p, err := ParseProfile("fuzz.yaml", in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		// A profile that parses gives finite, non-negative step times.
		for _, b := range []int{1, 7, 64} {
			if d := p.StepTime(b, 1, 1000); d < 0 {
				t.Fatalf("negative step time %v at batch %d", d, b)
			}
		}
		// Degradation never makes a step faster than nothing, or a pause
		// or a pool negative.
		for _, at := range []time.Duration{0, time.Minute, 25 * time.Hour} {
			if f := p.Degrade.stepFactor(at); !(f > 0) {
				t.Fatalf("step factor %v at %v", f, at)
			}
			if p.Degrade.stallLeft(at) < 0 || p.Degrade.kvTokens(p.KVTokens, at) < 0 {
				t.Fatalf("negative pause or pool at %v", at)
			}
		}
	})
}

// Every body, on every generation route, gets an answer: never a panic and
// never a hang (the context is short, max tokens are bounded by it).
func FuzzRequests(f *testing.F) {
	for _, tc := range wireCases {
		if tc.method == "POST" {
			f.Add(tc.path, tc.body)
		}
	}
	f.Add("/generate", `{"inputs":"a","parameters":{"max_new_tokens":-1}}`)
	f.Add("/v1/completions", `{"prompt":[1,2,3],"max_tokens":0,"stream":true}`)
	p := mustProfile(f, "tiny")
	p.ContextLength = 48
	p.Decode.Linear.AMs = 0.001
	s := New(p, Options{NoTrace: true})
	ctx, cancel := context.WithCancel(context.Background())
	f.Cleanup(cancel)
	go s.Run(ctx)
	routes := []string{"/v1/completions", "/v1/chat/completions", "/generate", "/generate_stream", "/completion", "/api/generate", "/api/chat"}
	f.Fuzz(func(t *testing.T, route, body string) {
		// The route string only picks one of the routes.
		i := len(route) % len(routes)
		for j, r := range routes {
			if r == route {
				i = j
			}
		}
		route = routes[i]
		req := httptest.NewRequest(http.MethodPost, route, strings.NewReader(body))
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, req)
		if w.Code == 0 {
			t.Fatal("no status")
		}
	})
}

// FuzzTokenize: every body to /tokenize and /detokenize, under both engines
// that have them (vLLM's "prompt", llama.cpp's "content") and with the
// word tokenizer, gets a JSON answer: 200 with the fields, or 400 saying
// why; never a panic.
func FuzzTokenize(f *testing.F) {
	for _, seed := range []string{`{"prompt":"hello world"}`, `{"content":"a b c"}`, `{"tokens":[1,2,3]}`, `{"tokens":[-1,99999999999]}`, `{"prompt":5}`, `{"tokens":"x"}`, `[]`, ``, `{"prompt":"\u0000\ud800"}`} {
		f.Add(false, false, seed)
		f.Add(true, true, seed)
	}
	servers := map[bool]*Server{}
	for _, llama := range []bool{false, true} {
		p := mustProfile(f, "tiny")
		if llama {
			p.Engine = "llamacpp"
		}
		servers[llama] = New(p, Options{NoTrace: true})
	}
	f.Fuzz(func(t *testing.T, llama, detokenize bool, body string) {
		route := "/tokenize"
		if detokenize {
			route = "/detokenize"
		}
		w := httptest.NewRecorder()
		servers[llama].Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, route, strings.NewReader(body)))
		var v map[string]any
		if (w.Code != 200 && w.Code != 400) || json.Unmarshal(w.Body.Bytes(), &v) != nil {
			t.Fatalf("%s %q: HTTP %d %.200q, want 200 or 400 with a JSON answer", route, body, w.Code, w.Body.String())
		}
	})
}
