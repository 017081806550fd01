package sim

import (
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The official OpenAI SDK talks to the simulator: streaming chat with usage,
// a plain completion, and the model list.
func TestOfficialOpenAISDK(t *testing.T) {
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
