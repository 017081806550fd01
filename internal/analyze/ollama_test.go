package analyze

import (
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// Ollama's /v1/completions is not raw: a run on it is told so, with the
// server's prompt count beside the asked length; its native raw route and
// other engines' completions are not.
func TestOllamaCompletionsTemplateWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		engine, endpoint string
		want             bool
	}{
		{"ollama", "completions", true},
		{"ollama", "generate", false},
		{"ollama", "chat", false},
		{"llamacpp", "completions", false},
	} {
		setup := record.Setup{Endpoint: tc.endpoint, Server: record.Server{Engine: tc.engine}, Workload: record.Workload{InputTokens: 2, OutputTokens: 4}}
		f := NewFold(setup, "r.jsonl")
		for i := range 3 {
			r := record.New(i)
			r.Concurrency, r.Sent, r.FirstByte, r.Done = 1, time.Duration(i)*time.Second, time.Duration(i)*time.Second+time.Millisecond, time.Duration(i)*time.Second+10*time.Millisecond
			r.AddChunk(r.Sent+2*time.Millisecond, 4)
			r.Status, r.OutputTokens, r.OutputSource, r.PromptTokens, r.PromptSource = record.StatusOK, 4, record.SourceUsage, 29, record.SourceUsage
			f.Add(&r)
		}
		var got *Warning
		for _, w := range f.Run().Warnings {
			if w.Check == "ollama_template" {
				got = &w
			}
		}
		switch {
		case tc.want && (got == nil || !strings.Contains(got.Text, "applies the model's chat template") || !strings.Contains(got.Text, "29 prompt tokens per request where 2 were asked")):
			t.Errorf("%s %s: warning %v, want the template named with 29 against 2", tc.engine, tc.endpoint, got)
		case !tc.want && got != nil:
			t.Errorf("%s %s: %s", tc.engine, tc.endpoint, got)
		}
	}
}
