package backend

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
)

// vllmStream is a vLLM /v1/completions stream of pieces, its final usage
// claiming completion tokens and the finish reason finish.
func vllmStream(pieces []string, completion int64, finish string) string {
	var b strings.Builder
	for _, p := range pieces {
		fmt.Fprintf(&b, `data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":%q,"logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}`+"\n\n", p)
	}
	fmt.Fprintf(&b, `data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":%q,"stop_reason":null}],"usage":null}`+"\n\n", finish)
	fmt.Fprintf(&b, `data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"total_tokens":%d,"completion_tokens":%d}}`+"\n\ndata: [DONE]\n\n", completion+5, completion)
	return b.String()
}

// Counts no server could have produced are flagged and kept out of the
// figures: more output than max_tokens, an absurd magnitude, more tokens
// than bytes; an honest count passes (issue 37).
func TestImpossibleCountsFlagged(t *testing.T) {
	t.Parallel()
	words := strings.Fields(strings.Repeat("the sea is wide and deep ", 4)) // 24 pieces
	for _, tc := range []struct {
		name       string
		pieces     []string
		completion int64
		max        int
		want       record.Status
		says       string
	}{
		{"honest", words[:20], 20, 20, record.StatusOK, ""},
		{"one past max_tokens", words[:21], 21, 20, record.StatusBadCount, "21 output tokens for max tokens 20"},
		{"absurd", words[:20], 9e15, 1 << 20, record.StatusBadCount, "more than any request holds"},
		{"more tokens than bytes", words[:3], 5000, 8000, record.StatusBadCount, "fewer bytes than tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := vllmStream(tc.pieces, tc.completion, "length")
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, body)
			}))
			defer srv.Close()
			b, _ := New(Config{URL: srv.URL, Endpoint: "completions", Engine: "vllm", Model: "m"})
			defer b.Close()
			rec := record.New(0)
			b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: tc.max, IgnoreEOS: true}, &rec)
			if rec.Status != tc.want || !strings.Contains(rec.Error, tc.says) {
				t.Fatalf("%s %q; want %s saying %q", rec.Status, rec.Error, tc.want, tc.says)
			}
			if tc.want == record.StatusBadCount && (rec.OutputTokens != len(rec.Chunks) || rec.ChunkTokens() != len(rec.Chunks)) {
				t.Errorf("flagged, yet %d output tokens in %d chunks of %d tokens are kept", rec.OutputTokens, len(rec.Chunks), rec.ChunkTokens())
			}
		})
	}
}
