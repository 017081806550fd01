package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The plain OpenAI-compatible server (engine "openai": TensorRT-LLM and the
// rest): the OpenAI routes every imitation serves, no identity route, and
// a /metrics with only the simulator's own health.
func init() {
	imitate("openai", imitation{metrics: func(*Server, *exposition) {}, nullLogprobs: true, usageNullAsked: true})
}

type openAIRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage         bool `json:"include_usage"`
		ContinuousUsageStats bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	IgnoreEOS   bool            `json:"ignore_eos"`
	MinTokens   int             `json:"min_tokens"`
	Temperature *float64        `json:"temperature"`
	Seed        *int64          `json:"seed"`
	Tools       []toolSpec      `json:"tools"`
	ToolChoice  json.RawMessage `json:"tool_choice"`
	// CachePrompt is llama.cpp's (on when absent); other engines ignore it.
	CachePrompt *bool `json:"cache_prompt"`
	// IncludeMetrics asks vLLM for the request's timings (its metrics
	// object), given where the server reports them (Wire.RequestTimes).
	IncludeMetrics bool `json:"include_metrics"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns a message's content, a string or a list of text parts.
func (m chatMessage) text() (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", fmt.Errorf("content is neither a string nor a list of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
		b.WriteByte(' ')
	}
	return b.String(), nil
}

// parsePrompt reads a prompt into g: a string, a one-element list of
// strings, or token ids.
func (s *Server) parsePrompt(g *gen, raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return fmt.Errorf("prompt is required")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		g.prompt, g.promptTokens = one, s.count(one)
		return nil
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		if len(list) != 1 {
			return fmt.Errorf("exactly one prompt per request is supported, got %d", len(list))
		}
		g.prompt, g.promptTokens = list[0], s.count(list[0])
		return nil
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		g.prompt, g.promptTokens, g.ids = fmt.Sprint(ids), len(ids), ids
		return nil
	}
	return fmt.Errorf("prompt must be a string, a list of one string, or token ids")
}

func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<20))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decoding the request body: %v", err)
	}
	return nil
}

func (s *Server) parseOpenAI(w http.ResponseWriter, r *http.Request, chat bool) (*gen, bool) {
	var req openAIRequest
	if err := decodeBody(r, &req); err != nil {
		openAIError(w, 400, err.Error())
		return nil, false
	}
	if req.Model != "" && req.Model != s.p.Model {
		openAIError(w, 404, fmt.Sprintf("The model `%s` does not exist.", req.Model))
		return nil, false
	}
	g := &gen{route: r.URL.Path, stream: req.Stream, ignoreEOS: req.IgnoreEOS, temperature: 1, chat: chat, minTokens: req.MinTokens}
	g.uncached = s.im.cachePrompt && req.CachePrompt != nil && !*req.CachePrompt
	if chat {
		if len(req.Messages) == 0 {
			openAIError(w, 400, "messages is required")
			return nil, false
		}
		msgs := make([]message, len(req.Messages))
		for i, m := range req.Messages {
			t, err := m.text()
			if err != nil {
				openAIError(w, 400, fmt.Sprintf("messages[%d]: %v", i, err))
				return nil, false
			}
			msgs[i] = message{m.Role, t}
		}
		s.chatPrompt(g, msgs)
	} else {
		if err := s.parsePrompt(g, req.Prompt); err != nil {
			openAIError(w, 400, err.Error())
			return nil, false
		}
	}
	switch {
	case req.MaxCompletionTokens != nil:
		g.maxTokens = *req.MaxCompletionTokens
	case req.MaxTokens != nil:
		g.maxTokens = *req.MaxTokens
	case chat:
		g.maxTokens = max(s.p.ContextLength-g.promptTokens, 0)
	default:
		g.maxTokens = 16
	}
	if req.Temperature != nil {
		g.temperature = *req.Temperature
	}
	if req.Seed != nil {
		g.seed = *req.Seed
	}
	if o := req.StreamOptions; o != nil && !s.p.Wire.OmitUsage {
		g.includeUsage, g.continuous = o.IncludeUsage, o.ContinuousUsageStats && !s.p.Wire.UsageAtEnd
	}
	if chat {
		g.tools, g.choice = offers(req.Tools), readChoice(req.ToolChoice)
	}
	g.metrics = req.IncludeMetrics && s.p.Wire.RequestTimes && s.p.Engine == "vllm"
	if req.MinTokens > 0 && req.MinTokens > g.maxTokens {
		openAIError(w, 400, "min_tokens must not exceed max_tokens")
		return nil, false
	}
	return g, true
}

func (s *Server) openAICompletions(w http.ResponseWriter, r *http.Request) {
	if s.absent(w, r) {
		return
	}
	if g, ok := s.parseOpenAI(w, r, false); ok {
		s.serve(w, r, g, &openAIFormat{s: s})
	}
}

func (s *Server) openAIChat(w http.ResponseWriter, r *http.Request) {
	if s.absent(w, r) {
		return
	}
	if g, ok := s.parseOpenAI(w, r, true); ok {
		s.serve(w, r, g, &openAIFormat{s: s, chat: true})
	}
}

type usage struct {
	PromptTokens        int            `json:"prompt_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details,omitempty"`
	// CompletionTokensDetails is sent by a reasoning profile.
	CompletionTokensDetails *completionDetails `json:"completion_tokens_details,omitempty"`
}

type completionDetails struct {
	ReasoningTokens int `json:"reasoning_tokens"`
}

// promptDetails is sent with a prefix cache, as vLLM does with
// --enable-prompt-tokens-details.
type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type openAIChunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint json.RawMessage `json:"system_fingerprint,omitempty"`
	Choices           []openAIChoice  `json:"choices"`
	// Usage is a *usage, JSON null where the engine sends "usage": null,
	// or nil for none.
	Usage any `json:"usage,omitempty"`
	// Timings are llama.cpp's, on its last chunk.
	Timings map[string]any `json:"timings,omitempty"`
	// Metrics are vLLM's per-request timings, on its usage chunk.
	Metrics map[string]float64 `json:"metrics,omitempty"`
}

// null is JSON's null, for the fields an engine sends empty.
var null = json.RawMessage("null")

type openAIChoice struct {
	Index        int             `json:"index"`
	Text         *string         `json:"text,omitempty"`
	Delta        *chatDelta      `json:"delta,omitempty"`
	Message      *chatDelta      `json:"message,omitempty"`
	Logprobs     json.RawMessage `json:"logprobs,omitempty"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason,omitempty"`
}

type chatDelta struct {
	Role             string     `json:"role,omitempty"`
	Content          *string    `json:"content,omitempty"`
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
	Reasoning        *string    `json:"reasoning,omitempty"`
	ToolCalls        []toolCall `json:"tool_calls,omitempty"`
}

// toolCall is one call in a message, or a fragment of it in a delta (the
// first carries id, type and name; later ones only argument text).
type toolCall struct {
	Index    *int   `json:"index,omitempty"` // deltas only
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type openAIFormat struct {
	s    *Server
	chat bool
}

func (f *openAIFormat) contentType() string { return "text/event-stream" }

func (f *openAIFormat) chunk(x *exchange, text string, finish string, completion int, withUsage bool) openAIChunk {
	c := openAIChunk{Created: x.created, Model: f.s.p.Model}
	ch := openAIChoice{}
	if f.s.im.nullLogprobs || f.s.im.tgiOpenAI {
		ch.Logprobs = null // vLLM, SGLang, TGI and OpenAI always send it; llama.cpp and Ollama never do
	}
	if f.chat {
		c.ID, c.Object = "chatcmpl-"+x.id, "chat.completion.chunk"
		ch.Delta = &chatDelta{Content: &text}
	} else {
		c.ID, c.Object = "cmpl-"+x.id, "text_completion"
		ch.Text = &text
	}
	if finish != "" {
		ch.FinishReason = &finish
	}
	if fp := f.s.im.fingerprint; fp != nil {
		c.SystemFingerprint, _ = json.Marshal(fp(f.s))
	}
	if f.chat && f.s.im.roleEvery {
		ch.Delta.Role = "assistant"
	}
	if f.s.im.tgiOpenAI {
		f.tgiHabits(&c, &ch, finish)
	} else if f.s.im.stopReason && !f.chat {
		c.SystemFingerprint, c.Usage, ch.StopReason = null, null, null
	}
	if f.s.im.usageNullAsked && x.g.includeUsage {
		c.Usage = null
	}
	if f.s.p.Wire.OmitUsage {
		c.Usage = nil // a server without counts sends no usage key at all
	}
	c.Choices = []openAIChoice{ch}
	if withUsage {
		u := &usage{PromptTokens: x.g.promptTokens, CompletionTokens: completion, TotalTokens: x.g.promptTokens + completion}
		if f.s.p.PrefixCache || f.s.im.timings {
			u.PromptTokensDetails = &promptDetails{CachedTokens: x.cached}
		}
		if r := f.s.p.Reasoning; r != nil && f.chat {
			u.CompletionTokensDetails = &completionDetails{ReasoningTokens: min(r.Tokens, completion)}
		}
		c.Usage = u
	}
	return c
}

// tgiHabits makes a chunk TGI's: no id, "usage": null, "stop" for an end
// of sequence on chat and "eos_token" on completions, whose finish_reason
// is "" before the last chunk.
func (f *openAIFormat) tgiHabits(c *openAIChunk, ch *openAIChoice, finish string) {
	c.ID, c.Usage = "", null
	if f.chat {
		return
	}
	switch finish {
	case "":
		ch.FinishReason = new(string)
	case "stop":
		eos := "eos_token"
		ch.FinishReason = &eos
	}
}

func sse(b []byte, v any) []byte {
	j, _ := json.Marshal(v)
	b = append(b, "data: "...)
	b = append(b, j...)
	return append(b, '\n', '\n')
}

func (f *openAIFormat) begin(b []byte, x *exchange) []byte {
	if !f.chat || f.s.im.roleEvery {
		return b // the first chat chunk is the first token's
	}
	c := f.chunk(x, "", "", 0, x.g.continuous)
	c.Choices[0].Delta.Role = "assistant"
	return f.put(b, c)
}

func (f *openAIFormat) event(b []byte, x *exchange, ev Event, text []byte, _ []int) []byte {
	p := f.s.cut(x, ev, text)
	finish := ev.Finish
	if ev.Done && x.opened {
		finish = "tool_calls"
	}
	// TGI's completions carry the usage on their last chunk, unasked.
	last := f.s.im.tgiOpenAI && !f.chat && ev.Done && !f.s.p.Wire.OmitUsage
	c := f.chunk(x, p.rest, finish, ev.Total, x.g.continuous || last)
	if ev.Done && f.s.im.timings && !x.g.includeUsage {
		c.Timings = llamaTimings(x, ev)
	}
	if f.chat {
		f.channels(c.Choices[0].Delta, x, p)
	}
	return f.put(b, c)
}

// channels moves a chat delta's text to its channels: the reasoning, and
// the rest as content or as a fragment of the tool call (its head with
// the first).
func (f *openAIFormat) channels(d *chatDelta, x *exchange, p piece) {
	if p.thinking != "" {
		f.reason(d, p.thinking, p.rest)
	}
	if x.g.tool == "" {
		return
	}
	d.Content = nil
	if p.rest != "" {
		call := f.call(x, p.head, p.rest)
		call.Index = new(int)
		d.ToolCalls = []toolCall{call}
	}
}

// reason puts thinking on the profile's reasoning channel of d and the
// rest, if any, in its content.
func (f *openAIFormat) reason(d *chatDelta, thinking, content string) {
	if f.s.p.Reasoning.Field == "reasoning" {
		d.Reasoning = &thinking
	} else {
		d.ReasoningContent = &thinking
	}
	d.Content = nil
	if content != "" {
		d.Content = &content
	}
}

// tokenCut is where the n-th token of text ends: every generated token
// is a space and a word.
func tokenCut(text []byte, n int) int {
	seen := 0
	for i, c := range text {
		if c == ' ' && i > 0 {
			if seen++; seen == n {
				return i
			}
		}
	}
	return len(text)
}

// call is the tool call of x, whole or (first false) a later fragment.
func (f *openAIFormat) call(x *exchange, first bool, args string) toolCall {
	var call toolCall
	if first {
		call.ID, call.Type, call.Function.Name = "call_"+x.id, "function", x.g.tool
	}
	call.Function.Arguments = args
	return call
}

func (f *openAIFormat) end(b []byte, x *exchange, ev Event) []byte {
	if x.g.includeUsage && (f.chat || !f.s.im.tgiOpenAI) {
		c := f.chunk(x, "", "", ev.Total, true)
		c.Choices = []openAIChoice{}
		if f.s.im.timings {
			c.Timings = llamaTimings(x, ev)
		}
		if x.g.metrics {
			c.Metrics = vllmMetrics(x, ev)
		}
		b = f.put(b, c)
	}
	if f.s.im.tgiOpenAI {
		return append(b, "data:[DONE]\n\n"...)
	}
	return append(b, "data: [DONE]\n\n"...)
}

// put writes an event as the engine frames it: TGI's server (axum)
// writes "data:" with no space, the others "data: ".
func (f *openAIFormat) put(b []byte, v any) []byte {
	if !f.s.im.tgiOpenAI {
		return sse(b, v)
	}
	j, _ := json.Marshal(v)
	b = append(b, "data:"...)
	b = append(b, j...)
	return append(b, '\n', '\n')
}

func (f *openAIFormat) whole(x *exchange, ev Event) any {
	p := f.s.whole(x, ev)
	finish := ev.Finish
	if p.head {
		finish = "tool_calls"
	}
	c := f.chunk(x, p.thinking+p.rest, finish, ev.Total, !f.s.p.Wire.OmitUsage)
	if f.chat {
		c.Object = "chat.completion"
		c.Choices[0].Message = &chatDelta{Role: "assistant", Content: &p.rest}
		f.channels(c.Choices[0].Message, x, p)
		c.Choices[0].Delta = nil
	}
	return c
}

func (f *openAIFormat) fail(b []byte, msg string) []byte {
	return sse(b, map[string]any{"error": map[string]any{"message": msg, "type": "InternalServerError", "code": 500}})
}

// chatPrompt makes g's prompt of a chat's messages: their text, each after
// its role, and their tokens as the template counts them (four a message
// around its text, three for the assistant's header).
func (s *Server) chatPrompt(g *gen, msgs []message) {
	var b strings.Builder
	g.promptTokens = 3 // the template's assistant header
	for _, m := range msgs {
		g.promptTokens += 4 + s.count(m.text)
		b.WriteString(m.role)
		b.WriteByte(':')
		b.WriteString(m.text)
		b.WriteByte('\n')
	}
	g.msgs, g.prompt = msgs, b.String()
}
