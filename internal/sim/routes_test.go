package sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// The Responses and Messages routes answer a non-streamed request whole:
// the reasoning and the tool call as output items or content blocks,
// with the usage; a request the API refuses is answered with its error.
func TestResponsesAndMessagesWhole(t *testing.T) {
	t.Parallel()
	p := mustProfile(t, "tiny")
	p.Reasoning = &Reasoning{Tokens: 2, Field: "reasoning_content"}
	p.Tools = &Tools{Probability: 1, ArgumentsTokens: 3}
	serveVirtual(t, p, func(c *http.Client, _ *Server) {
		_, _, body := do(t, c, "POST", "/v1/responses", `{"input":"weather?","max_output_tokens":10,"tools":[{"type":"function","name":"get_weather","parameters":{"required":["city"]}}]}`)
		var resp struct {
			Status string `json:"status"`
			Output []struct {
				Type, Name, Arguments string
			} `json:"output"`
			Usage struct {
				OutputTokens        int `json:"output_tokens"`
				OutputTokensDetails struct {
					ReasoningTokens int `json:"reasoning_tokens"`
				} `json:"output_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(body, &resp); err != nil || resp.Status != "completed" || len(resp.Output) != 2 || resp.Output[1].Name != "get_weather" ||
			!json.Valid([]byte(resp.Output[1].Arguments)) || resp.Usage.OutputTokens != 5 || resp.Usage.OutputTokensDetails.ReasoningTokens != 2 {
			t.Errorf("responses: %s (%v)", body, err)
		}
		_, _, body = do(t, c, "POST", "/v1/messages", `{"max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"weather?"}]}],"tools":[{"name":"get_weather","input_schema":{"required":["city"]}}]}`)
		var msg struct {
			StopReason string `json:"stop_reason"`
			Content    []struct {
				Type, Name string
				Input      map[string]string
			} `json:"content"`
			Usage struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(body, &msg); err != nil || msg.StopReason != "tool_use" || len(msg.Content) != 2 || msg.Content[0].Type != "thinking" ||
			msg.Content[1].Name != "get_weather" || msg.Content[1].Input["city"] == "" || msg.Usage.OutputTokens != 5 {
			t.Errorf("messages: %s (%v)", body, err)
		}
		code, _, body := do(t, c, "POST", "/v1/messages", `{"messages":[{"role":"user","content":"x"}]}`)
		if code != 400 || !strings.Contains(string(body), "max_tokens: Field required") || !strings.Contains(string(body), `"invalid_request_error"`) {
			t.Errorf("no max_tokens: %d %s", code, body)
		}
	})
}
