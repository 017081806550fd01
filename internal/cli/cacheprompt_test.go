package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/workload"
)

// Conversations against llama.cpp turn cache_prompt on and the header
// says so, unless --cache-prompt was given (here in --config too);
// single-turn runs keep it off and say nothing.
func TestConversationsCachePromptHeader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	profile := filepath.Join(dir, "llama.yaml")
	os.WriteFile(profile, []byte("name: llama\nengine: llamacpp\nmodel: m\nmax_running: 8\nkv_tokens: 1000000\nchunked_prefill: 100000\n"+
		"decode: {linear: {a_ms: 1, c_ms: 0}}\nprefill: {fixed_ms: 0.2, per_token_us: 1}\nprefix_cache: true\nseed: 1\n"), 0o644)
	config := filepath.Join(dir, "off.yaml")
	os.WriteFile(config, []byte("cache-prompt: false\n"), 0o644)
	const note = "cache_prompt on: llama.cpp reuses its prompt cache from turn to turn"
	for _, tc := range []struct {
		name string
		args []string
		want bool
	}{
		{"conversations", []string{"--turns", "3"}, true},
		{"conversations, --cache-prompt=false", []string{"--turns", "3", "--cache-prompt=false"}, false},
		{"conversations, cache-prompt: false in --config", []string{"--turns", "3", "--config", config}, false},
		{"single turn", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "--sim-profile", profile, "-c", "1", "--requests", "3", "--input-tokens", "40", "--output-tokens", "8", "-o", filepath.Join(t.TempDir(), "r.jsonl")}, tc.args...)
			out, errw, code := runVirtual(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errw)
			}
			if got := strings.Contains(out, note); got != tc.want {
				t.Errorf("the header says %q: %v, want %v\n%s", note, got, tc.want, out)
			}
		})
	}
}

// tokperf run --trace --tokenizer against the embedded simulator: it
// counts in the same tokens, so its prefix cache hits the share of input
// tokens trace stats computes from the file, within half a point.
func TestTraceOnTheEmbeddedSimulatorInTokens(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	profile := filepath.Join(dir, "cache.yaml")
	os.WriteFile(profile, []byte("name: cache\nengine: vllm\nmodel: m\nmax_running: 256\nkv_tokens: 10000000\nchunked_prefill: 1000000\n"+
		"decode: {linear: {a_ms: 1, c_ms: 0}}\nprefill: {fixed_ms: 0.2, per_token_us: 1}\nprefix_cache: true\nseed: 1\n"), 0o644)
	// 60 requests, 50 ms apart: a shared system prompt of two blocks, one
	// of 3 histories, a block of their own and a partial tail.
	var b strings.Builder
	for i := range 60 {
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": 150, "output_length": 4, "hash_ids": [1, 2, %d, %d, %d]}`+"\n", 50*i, 10+i%3, 100+i, 1000+i)
	}
	trace := filepath.Join(dir, "t.jsonl")
	os.WriteFile(trace, []byte(b.String()), 0o644)
	tr, err := workload.LoadTrace(trace)
	if err != nil {
		t.Fatal(err)
	}
	want := tr.Stats(32).TokenReuse()
	out, errw, code := runVirtual(t, "run", "--sim-profile", profile, "--trace", trace, "--block-size", "32", "--tokenizer", "o200k_base", "--format", "json", "-o", filepath.Join(dir, "r.jsonl"))
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errw)
	}
	var run struct {
		Stages []struct {
			PromptTokens int `json:"prompt_tokens"`
			CachedTokens int `json:"cached_tokens"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(out), &run); err != nil || len(run.Stages) != 1 {
		t.Fatalf("%v: %s", err, out)
	}
	s := run.Stages[0]
	got := float64(s.CachedTokens) / float64(s.PromptTokens)
	t.Logf("the simulator hit %.2f%% (%d of %d), trace stats says %.2f%%", 100*got, s.CachedTokens, s.PromptTokens, 100*want)
	if math.Abs(got-want) > 0.005 || s.PromptTokens != 60*150 {
		t.Errorf("the simulator hit %.2f%% of %d prompt tokens, trace stats says %.2f%% of %d", 100*got, s.PromptTokens, 100*want, 60*150)
	}
}
