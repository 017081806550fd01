package sim

import (
	"encoding/json"
	"net/http"
	"testing"
	"unicode/utf8"
)

// runes counts a text's characters: a tokenizer unlike the word count.
type runes struct{}

func (runes) Count(s string) int { return utf8.RuneCountInString(s) }

// With a tokenizer the simulator counts prompts as it does, in usage and in
// the prefill it models, on every route.
func TestTokenizerCountsPrompts(t *testing.T) {
	serveVirtualWith(t, mustProfile(t, "tiny"), Options{Tokenizer: runes{}}, nil, func(c *http.Client, s *Server) {
		for _, tc := range []struct{ route, body string }{
			{"/v1/completions", `{"prompt":"abc de","max_tokens":2}`},
			{"/v1/completions", `{"prompt":["abc de"],"max_tokens":2}`},
		} {
			_, _, body := do(t, c, "POST", tc.route, tc.body)
			var resp struct {
				Usage struct {
					PromptTokens int `json:"prompt_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(body, &resp); err != nil || resp.Usage.PromptTokens != 6 {
				t.Errorf("%s %s: %d prompt tokens (%v), want the tokenizer's 6: %s", tc.route, tc.body, resp.Usage.PromptTokens, err, body)
			}
		}
		for _, tr := range s.Trace() {
			if tr.PromptTokens != 6 {
				t.Errorf("the trace says %d prompt tokens, want 6", tr.PromptTokens)
			}
		}
	})
}
