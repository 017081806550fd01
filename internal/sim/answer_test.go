package sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		prompt, right, wrong string
	}{
		{"What is 37 + 48? Answer with the number only.", " 85", " 86"},
		{"What is 12 times 7? Answer with the number only.", " 84", " 85"},
		{"Write 347 in words, in lowercase, without 'and'.", " three hundred forty-seven", " three hundred forty-eight"},
		{"Which number is written 'nine hundred five'? Answer with digits only.", " 905", " 906"},
	} {
		for _, wrong := range []bool{false, true} {
			p := mustProfile(t, "tiny")
			p.Wire.WrongAnswers = wrong
			serveVirtual(t, p, func(c *http.Client, _ *Server) {
				body, _ := json.Marshal(map[string]any{"prompt": tc.prompt, "max_tokens": 32, "temperature": 0})
				_, _, out := do(t, c, "POST", "/v1/completions", string(body))
				var resp struct {
					Choices []struct {
						Text         string `json:"text"`
						FinishReason string `json:"finish_reason"`
					} `json:"choices"`
				}
				json.Unmarshal(out, &resp)
				want := tc.right
				if wrong {
					want = tc.wrong
				}
				if got := resp.Choices[0]; got.Text != want || got.FinishReason != "stop" {
					t.Errorf("%q (wrong=%v): %q %s, want %q stop", tc.prompt, wrong, got.Text, got.FinishReason, want)
				}
			})
		}
	}
	if answerFor("Tell me about the sea.", false) != nil {
		t.Error("answered a question that was not asked")
	}
	for n := range 1000 {
		if got, ok := wordsNumber(numberWords(n)); !ok || got != n || strings.Contains(numberWords(n), " and ") {
			t.Fatalf("%d: %q", n, numberWords(n))
		}
	}
}
