//go:build sdk

package sim

import (
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// The official OpenAI SDK streams the simulator's Responses API: a
// reasoning profile that calls a tool. Its events decode into the SDK's
// types; the reasoning and argument deltas add up to the usage, the call
// joins into arguments that parse, and the completed response's output
// holds the reasoning item and the function call.
func TestOfficialOpenAISDKResponses(t *testing.T) {
	t.Parallel()
	p := mustProfile(t, "tiny")
	p.Reasoning = &Reasoning{Tokens: 3, Field: "reasoning_content"}
	p.Tools = &Tools{Probability: 1, ArgumentsTokens: 4}
	_, url, stop, err := Start(t.Context(), p, "127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	stream := client.Responses.NewStreaming(t.Context(), responses.ResponseNewParams{
		Model:           "tiny",
		Input:           responses.ResponseNewParamsInputUnion{OfString: openai.String("weather in Paris?")},
		MaxOutputTokens: openai.Int(20),
		Tools:           []responses.ToolUnionParam{responses.ToolParamOfFunction("get_weather", map[string]any{"type": "object", "required": []string{"city"}}, true)},
	})
	var reasoning, argDeltas int
	var args string
	var done responses.Response
	for stream.Next() {
		e := stream.Current()
		switch e.Type {
		case "response.reasoning_text.delta":
			reasoning++
		case "response.function_call_arguments.delta":
			argDeltas++
			args += e.Delta
		case "response.completed":
			done = e.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("streaming: %v", err)
	}
	var parsed map[string]string
	if err := json.Unmarshal([]byte(args), &parsed); err != nil || parsed["city"] == "" {
		t.Errorf("arguments %q (%v), want an object with city", args, err)
	}
	u := done.Usage
	if reasoning != 3 || argDeltas != 4 || u.OutputTokens != 7 || u.OutputTokensDetails.ReasoningTokens != 3 || u.InputTokens == 0 {
		t.Errorf("%d reasoning and %d argument deltas, usage %+v; want 3, 4, 7 output of which 3 reasoning", reasoning, argDeltas, u)
	}
	if len(done.Output) != 2 || done.Output[0].Type != "reasoning" || done.Output[1].Type != "function_call" || done.Output[1].Name != "get_weather" || done.Output[1].Arguments.OfString != args {
		t.Errorf("output %+v", done.Output)
	}
}
