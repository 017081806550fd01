package backend

import (
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
)

// readText reads in through p, keeping the text as check does.
func readText(p protocol, in string) (record.Record, string) {
	rec := record.New(0)
	var text strings.Builder
	readStream(p, strings.NewReader(in), record.NewClock(), &rec, &text)
	return rec, text.String()
}

// A hosted provider's chat chunks carry the same piece as choices[].text
// and as delta.content: the answer is read once, not twice (issue 37).
func TestChoiceTextAndDeltaReadOnce(t *testing.T) {
	t.Parallel()
	in := `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"text":"Deep","delta":{"role":"assistant","content":"Deep"},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"text":" learning","delta":{"content":" learning"},"finish_reason":null}]}` + "\n\n" +
		`data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"text":"","delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}` + "\n\n" +
		"data: [DONE]\n\n"
	rec, text := readText(&openAI{chat: true}, in)
	if text != "Deep learning" || rec.Status != record.StatusOK || rec.OutputTokens != 2 {
		t.Errorf("text %q, %s, %d tokens; want \"Deep learning\", ok, 2", text, rec.Status, rec.OutputTokens)
	}
	// A completions chunk with only text keeps it.
	_, text = readText(&openAI{}, `data: {"choices":[{"text":"only","finish_reason":"length"}]}`+"\n\ndata: [DONE]\n\n")
	if text != "only" {
		t.Errorf("text-only chunk read as %q", text)
	}
}

// Two data lines in one SSE event, each a whole JSON object (an SGLang
// error object written with [DONE] and no blank line between them): the
// server's error is what the record says, not a parser message. An
// object split over lines is still one event.
func TestEventOfSeveralDataLines(t *testing.T) {
	t.Parallel()
	rec, _ := readText(sglang{}, `data: {"error":{"message":"The input (9000 tokens) is longer than the model's context length (8192 tokens)."}}`+"\ndata: [DONE]\n\n")
	if rec.Status != record.StatusStreamError || !strings.Contains(rec.Error, "context length") || strings.Contains(rec.Error, "malformed") {
		t.Errorf("%s %q; want the server's error", rec.Status, rec.Error)
	}
	two := `data: {"choices":[{"text":"a","finish_reason":null}]}` + "\n" +
		`data: {"choices":[{"text":"b","finish_reason":"length"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}` + "\n\ndata: [DONE]\n\n"
	rec, text := readText(&openAI{}, two)
	if rec.Status != record.StatusOK || text != "ab" || rec.OutputTokens != 2 {
		t.Errorf("two chunks in one event: %s %q text %q, %d tokens", rec.Status, rec.Error, text, rec.OutputTokens)
	}
	split := "data: {\"choices\":[{\"text\":\"a\",\n" + `data: "finish_reason":"length"}]}` + "\n\ndata: [DONE]\n\n"
	if rec, text = readText(&openAI{}, split); rec.Status != record.StatusOK || text != "a" {
		t.Errorf("an object over two lines: %s %q text %q", rec.Status, rec.Error, text)
	}
}

// TGI's stream without details (a proxy that drops them, or details:false)
// ends at the event with generated_text: a whole answer, counted by its
// events.
func TestTGIEndWithoutDetails(t *testing.T) {
	t.Parallel()
	in := `data:{"index":1,"token":{"id":5,"text":" a","logprob":-0.1,"special":false},"generated_text":null,"details":null}` + "\n\n" +
		`data:{"index":2,"token":{"id":2,"text":"</s>","logprob":-0.1,"special":true},"generated_text":" a","details":null}` + "\n\n"
	rec, text := readText(tgi{}, in)
	if rec.Status != record.StatusOK || rec.OutputTokens != 2 || text != " a" {
		t.Errorf("%s %q, %d tokens, text %q; want ok, 2, \" a\"", rec.Status, rec.Error, rec.OutputTokens, text)
	}
}

// SGLang states its reasoning tokens in meta_info (with a reasoning
// parser on): they are read as the server's count.
func TestSGLangReasoningTokens(t *testing.T) {
	t.Parallel()
	in := `data: {"text":"<think>x</think> y","output_ids":[1,2,3],"meta_info":{"id":"a","finish_reason":{"type":"length","length":3},"prompt_tokens":4,"completion_tokens":3,"reasoning_tokens":2,"cached_tokens":0,"e2e_latency":0.05}}` + "\n\ndata: [DONE]\n\n"
	rec, _ := readText(sglang{}, in)
	if rec.ReasoningTokens != 2 || rec.ReasoningSource != record.SourceUsage {
		t.Errorf("reasoning %d from %q; want 2 from usage", rec.ReasoningTokens, rec.ReasoningSource)
	}
}

// A stream of events the route does not know (here the Messages API's
// shape, from a gateway that speaks it on this route) ends incomplete, as
// a cut connection does, but its error says what was seen.
func TestUnrecognisedEventsSaid(t *testing.T) {
	t.Parallel()
	rec, _ := readText(&openAI{chat: true}, `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`+"\n\ndata: {\"type\":\"ping\"}\n\n")
	if rec.Status != record.StatusIncomplete || !strings.Contains(rec.Error, "2 events, none with this route's tokens") || !strings.Contains(rec.Error, "content_block_delta") {
		t.Errorf("%s %q; want incomplete naming the 2 unknown events", rec.Status, rec.Error)
	}
	cut := `data: {"choices":[{"text":"a","finish_reason":null}]}` + "\n\n"
	if rec, _ = readText(&openAI{}, cut); rec.Status != record.StatusIncomplete || strings.Contains(rec.Error, "none with") {
		t.Errorf("a cut stream: %s %q", rec.Status, rec.Error)
	}
	if rec, _ = readText(&openAI{}, ""); !strings.Contains(rec.Error, "no event") {
		t.Errorf("an empty stream: %s %q", rec.Status, rec.Error)
	}
}
