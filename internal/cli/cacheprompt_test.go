package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Conversations against llama.cpp turn cache_prompt on and the header
// says so, unless --cache-prompt was given (here in --config too);
// single-turn runs keep it off and say nothing.
func TestConversationsCachePromptHeader(t *testing.T) {
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
