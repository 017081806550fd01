package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"unicode/utf8"

	"github.com/tokperf/tokperf/internal/tokenizer"
)

// runes counts a text's characters: a tokenizer unlike the word count.
type runes struct{}

func (runes) Count(s string) int { return utf8.RuneCountInString(s) }

// With a tokenizer the simulator counts prompts as it does, in usage and in
// the prefill it models, on every route.
func TestTokenizerCountsPrompts(t *testing.T) {
	t.Parallel()
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

// With a real tokenizer the simulator's output is text that the same
// tokenizer counts as the tokens it reports, so a client counting with it
// agrees with the server's usage.
func TestOutputCountsByTheTokenizer(t *testing.T) {
	t.Parallel()
	tok, err := tokenizer.Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(oneTokenWords(tok.Count)); n < 64 {
		t.Fatalf("only %d of the simulator's words are one o200k token", n)
	}
	serveVirtualWith(t, mustProfile(t, "tiny"), Options{Tokenizer: tok}, nil, func(c *http.Client, s *Server) {
		for _, n := range []int{1, 17, 200} {
			_, _, body := do(t, c, "POST", "/v1/completions", fmt.Sprintf(`{"prompt":"a b c","max_tokens":%d,"ignore_eos":true}`, n))
			var resp struct {
				Choices []struct {
					Text string `json:"text"`
				} `json:"choices"`
				Usage struct {
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			if err := json.Unmarshal(body, &resp); err != nil || len(resp.Choices) != 1 {
				t.Fatalf("%v: %s", err, body)
			}
			if got := tok.Count(resp.Choices[0].Text); got != n || resp.Usage.CompletionTokens != n {
				t.Errorf("%d tokens asked: the text is %d by o200k_base, the usage says %d", n, got, resp.Usage.CompletionTokens)
			}
		}
	})
}
