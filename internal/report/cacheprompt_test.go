package report

import (
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
)

// The header says when llama.cpp was asked to reuse its prompt cache, and
// why; off, it says nothing.
func TestDescribeCachePrompt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, setting, want string }{
		{"off", "", ""},
		{"conversations", "conversations", "cache_prompt on: llama.cpp reuses its prompt cache from turn to turn"},
		{"asked", "asked", "cache_prompt on (--cache-prompt)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Describe(record.Setup{Server: record.Server{Engine: "llamacpp"}, CachePrompt: tc.setting})
			if tc.want == "" && strings.Contains(got, "cache_prompt") || !strings.Contains(got, tc.want) {
				t.Errorf("header %q, want %q", got, tc.want)
			}
		})
	}
}
