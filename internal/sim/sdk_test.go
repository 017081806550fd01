//go:build sdk

// The compatibility test with the official OpenAI SDK: out of the default
// build, whose first run would otherwise compile the SDK (about 80 s and
// 2.7 GB on 2 cores) for this one file. CI runs it: go test -tags sdk ./internal/sim

package sim

import (
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// The official OpenAI SDK talks to the simulator: streaming chat with usage,
// a plain completion, and the model list.
func TestOfficialOpenAISDK(t *testing.T) {
	t.Parallel()
	_, url, stop, err := Start(t.Context(), mustProfile(t, "tiny"), "127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ctx := t.Context()

	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model:         "tiny",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("say something")},
		MaxTokens:     openai.Int(7),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("streaming chat: %v", err)
	}
	if len(acc.Choices) != 1 || countTokens(acc.Choices[0].Message.Content) != 7 || acc.Choices[0].FinishReason != "length" {
		t.Errorf("chat: choices %+v", acc.Choices)
	}
	if acc.Usage.CompletionTokens != 7 || acc.Usage.PromptTokens == 0 {
		t.Errorf("chat usage %+v, want 7 completion tokens", acc.Usage)
	}
	if chunks != 1+7+1 { // role, seven tokens, usage
		t.Errorf("%d chunks, want 9", chunks)
	}

	c, err := client.Completions.New(ctx, openai.CompletionNewParams{
		Model:     "tiny",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String("once upon a time")},
		MaxTokens: openai.Int(5),
	})
	if err != nil {
		t.Fatalf("completion: %v", err)
	}
	if len(c.Choices) != 1 || countTokens(c.Choices[0].Text) != 5 || c.Usage.CompletionTokens != 5 || c.Usage.PromptTokens != 4 {
		t.Errorf("completion %+v usage %+v", c.Choices, c.Usage)
	}

	models, err := client.Models.List(ctx)
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != "tiny" {
		t.Errorf("models %+v, %v", models, err)
	}
}

// The SDK accumulates the simulator's streamed tool call into one call
// with the tool's name and arguments that parse.
func TestOfficialOpenAISDKToolCall(t *testing.T) {
	t.Parallel()
	p := mustProfile(t, "tiny")
	p.Wire.ToolCalls = true
	_, url, stop, err := Start(t.Context(), p, "127.0.0.1:0", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	stream := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
		Model:     "tiny",
		Messages:  []openai.ChatCompletionMessageParamUnion{openai.UserMessage("weather?")},
		MaxTokens: openai.Int(5),
		Tools:     []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get_weather"})},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("streaming chat: %v", err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].FinishReason != "tool_calls" || len(acc.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("choices %+v", acc.Choices)
	}
	call := acc.Choices[0].Message.ToolCalls[0]
	var args struct{ Text string }
	if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil || call.Function.Name != "get_weather" || countTokens(args.Text) != 5 {
		t.Errorf("call %+v (%v), want get_weather with 5 words", call, err)
	}
}
