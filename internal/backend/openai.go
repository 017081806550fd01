package backend

import (
	"encoding/json"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
)

// openAI is /v1/completions and /v1/chat/completions, streaming, asking for
// usage and continuous usage stats.
type openAI struct {
	chat bool
	// cachePrompt: the engine reuses its prompt cache unless told not to
	// (engine.PromptCache), on these routes as on its native one.
	cachePrompt bool
}

var _ protocol = (*openAI)(nil)

func init() {
	endpoints["completions"] = endpoint{"", func(cfg *Config) protocol { return newOpenAI(cfg, false) }}
	endpoints["chat"] = endpoint{"", func(cfg *Config) protocol { return newOpenAI(cfg, true) }}
}

func newOpenAI(cfg *Config, chat bool) *openAI {
	e, _ := engine.Lookup(cfg.Engine)
	return &openAI{chat: chat, cachePrompt: e.PromptCache}
}

func (o *openAI) route() string {
	if o.chat {
		return "/v1/chat/completions"
	}
	return "/v1/completions"
}

type openAIBody struct {
	Model    string            `json:"model,omitempty"`
	Prompt   string            `json:"prompt,omitempty"`
	Messages []json.RawMessage `json:"messages,omitempty"`
	Tools    json.RawMessage   `json:"tools,omitempty"`
	// ResponseFormat is --response-format's (chatFormat).
	ResponseFormat json.RawMessage `json:"response_format,omitempty"`
	MaxTokens      int             `json:"max_tokens"`
	Stream         bool            `json:"stream"`
	StreamOptions  struct {
		IncludeUsage         bool `json:"include_usage"`
		ContinuousUsageStats bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	IgnoreEOS   bool    `json:"ignore_eos,omitempty"`
	Temperature float64 `json:"temperature"`
	Seed        int64   `json:"seed,omitempty"`
	// CachePrompt is llama.cpp's: its OpenAI routes reuse the prompt cache
	// unless told not to, as its native route is.
	CachePrompt *bool `json:"cache_prompt,omitempty"`
}

type openAIMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func (o *openAI) body(cfg *Config, req *record.Request) ([]byte, error) {
	b := openAIBody{Model: cfg.Model, MaxTokens: req.MaxTokens, Stream: true, IgnoreEOS: req.IgnoreEOS, Temperature: req.Temperature, Seed: req.Seed}
	if o.cachePrompt {
		// Both routes alike: an overhead comparison is unfair when only the
		// raw side turns the cache off.
		b.CachePrompt = &cfg.CachePrompt
	}
	b.StreamOptions.IncludeUsage, b.StreamOptions.ContinuousUsageStats = true, !cfg.UsageFinal
	b.ResponseFormat = chatFormat(cfg.Format)
	if !o.chat {
		b.Prompt = req.Prompt
		return json.Marshal(&b)
	}
	// A dataset's conversation goes as it was written (its messages and
	// tools unchanged); a prompt is one user turn.
	msgs := req.Messages
	if len(msgs) == 0 {
		msgs = []record.Message{{Role: "user", Content: req.Prompt}}
	}
	for _, m := range msgs {
		raw := m.Raw
		if raw == nil {
			var err error
			if raw, err = json.Marshal(openAIMessage{Role: m.Role, Content: m.Content}); err != nil {
				return nil, err
			}
		}
		b.Messages = append(b.Messages, raw)
	}
	b.Tools = req.Tools
	return json.Marshal(&b)
}

type openAIUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type openAIChoice struct {
	Text  *string `json:"text"`
	Delta *struct {
		Content          *string         `json:"content"`
		ReasoningContent *string         `json:"reasoning_content"`
		Reasoning        *string         `json:"reasoning"`
		ToolCalls        json.RawMessage `json:"tool_calls"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type openAIChunk struct {
	Object  string         `json:"object"`
	Choices []openAIChoice `json:"choices"`
	Usage   *openAIUsage   `json:"usage"`
	Timings *llamaTimings  `json:"timings"` // llama.cpp, on the last chunk
	Metrics *vllmMetrics   `json:"metrics"` // vLLM's per-request timings, where asked
	Error   *streamError   `json:"error"`
	Message string         `json:"message"` // some servers' error objects
}

// vllmMetrics is vLLM's per-request "metrics" object, sent on the last
// chunk when the server runs with --enable-per-request-metrics and the
// request asks include_metrics (--extra-body '{"include_metrics":true}').
// Only its queue time is read (vLLM PR #46768): the instant its
// time_to_first_token_ms starts from (arrival or scheduling) is not
// checked against vLLM's code here, so no prefill is derived from it.
type vllmMetrics struct {
	QueueTimeMs *float64 `json:"queue_time_ms"`
}

// serverTiming is the request's timing as the server reported it on this
// chunk (llama.cpp's timings, vLLM's metrics), or nil.
func (c *openAIChunk) serverTiming() *record.ServerTiming {
	if t := c.Timings.timing(); t != nil {
		return t
	}
	return c.Metrics.timing()
}

func (m *vllmMetrics) timing() *record.ServerTiming {
	if m == nil || m.QueueTimeMs == nil || *m.QueueTimeMs <= 0 {
		return nil
	}
	return &record.ServerTiming{QueueMs: *m.QueueTimeMs}
}

// content is a choice's new text. Some hosted providers send the same
// text twice in one choice, as "text" and as "delta.content": it is one
// answer, so the delta's wins where both are there.
func (ch *openAIChoice) content() string {
	if d := ch.Delta; d != nil && d.Content != nil && *d.Content != "" {
		return *d.Content
	}
	if ch.Text != nil {
		return *ch.Text
	}
	return ""
}

// slowChunk decodes the current chunk with encoding/json into f: a
// stream error fails the record (false), a tool call's fragments join
// its calls, the text is kept when asked.
func slowChunk(s *stream, f *chunkFacts, tools *calls) bool {
	var c openAIChunk
	if !s.decode(&c) {
		return false
	}
	if c.Error != nil || c.Object == "error" {
		msg := c.Message
		if c.Error != nil {
			msg = c.Error.Message
		}
		s.fail(msg)
		return false
	}
	if t := c.serverTiming(); t != nil {
		s.rec.Server = t
	}
	*f = c.facts()
	for _, ch := range c.Choices {
		if ch.Delta != nil && f.tool {
			tools.addDeltas(s.rec, ch.Delta.ToolCalls)
		}
		if s.text != nil {
			s.text.WriteString(ch.content())
		}
	}
	return true
}

// fastPath reads chunks with fastChunk first (tests turn it off to compare).
var fastPath = true

// facts reduces a decoded chunk to what the client reads.
func (c *openAIChunk) facts() chunkFacts {
	var f chunkFacts
	f.choices = len(c.Choices)
	for _, ch := range c.Choices {
		if ch.Text != nil && *ch.Text != "" {
			f.content = true
		}
		if d := ch.Delta; d != nil {
			f.content = f.content || (d.Content != nil && *d.Content != "")
			f.reasoning = f.reasoning || (d.ReasoningContent != nil && *d.ReasoningContent != "") || (d.Reasoning != nil && *d.Reasoning != "")
			f.tool = f.tool || (len(d.ToolCalls) > 0 && string(d.ToolCalls) != "null" && string(d.ToolCalls) != "[]")
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			f.hasFinish, f.finish = true, *ch.FinishReason
		}
	}
	if u := c.Usage; u != nil {
		f.usage, f.prompt, f.completion = true, u.PromptTokens, u.CompletionTokens
		if d := u.PromptTokensDetails; d != nil {
			f.cached = d.CachedTokens
		}
		if d := u.CompletionTokensDetails; d != nil {
			f.reasoningTokens = d.ReasoningTokens
		}
	}
	return f
}

type streamError struct {
	Message string `json:"message"`
	Code    any    `json:"code"`
}

func (e *streamError) UnmarshalJSON(b []byte) error {
	// "error" is an object on most servers and a bare string on a few.
	var s string
	if json.Unmarshal(b, &s) == nil {
		e.Message = s
		return nil
	}
	type plain streamError
	return json.Unmarshal(b, (*plain)(e))
}

func (o *openAI) framing() framing { return sse }

func (o *openAI) read(s *stream) bool {
	rec := s.rec
	var (
		cum        int // last cumulative completion_tokens seen per chunk
		continuous bool
		final      int
		hasFinal   bool
		sawFinish  bool
		thinking   int // tokens of chunks with reasoning and no content
		tooling    int // tokens of chunks with only tool-call deltas
		tools      calls
	)
	for s.Next() {
		data := s.Data()
		f, ok := chunkFacts{}, false
		if fastPath && s.text == nil {
			f, ok = fastChunk(data)
		}
		if !ok && !slowChunk(s, &f, &tools) {
			return false
		}
		content, reasoning, tool := f.content, f.reasoning, f.tool
		if f.hasFinish {
			sawFinish = true
			rec.FinishReason = f.finish
		}
		n := 0
		if f.usage && f.completion > 0 {
			// Usage on a chunk that still streams is cumulative (continuous
			// usage stats); on an empty or finishing chunk it is the final
			// count, unless the stream was continuous all along. A zero
			// usage is neither: some servers attach one to every chunk.
			if f.choices > 0 && (continuous || !sawFinish) {
				continuous = true
				n = f.completion - cum
				cum = f.completion
			} else {
				final, hasFinal = f.completion, true
				if content || reasoning || tool {
					n = 1 // the finishing chunk's own tokens are not counted: assume one
				}
			}
			if f.prompt > 0 {
				rec.PromptTokens, rec.PromptSource = f.prompt, record.SourceUsage
			}
			if f.cached > 0 {
				rec.CachedTokens = f.cached
			}
			if f.reasoningTokens > 0 {
				rec.ReasoningTokens, rec.ReasoningSource = f.reasoningTokens, record.SourceUsage
			}
		} else if content || reasoning || tool {
			n = 1
		}
		if n > 0 {
			// A tool call is the turn's output as much as text is: its
			// first delta is the first content (METRICS.md §2, TTFO).
			s.chunk(n, content || tool)
			switch {
			case reasoning && !content:
				thinking += n
			case tool && !content:
				tooling += n
			}
		}
	}
	switch {
	case hasFinal:
		rec.OutputTokens, rec.OutputSource = final, record.SourceUsage
	case continuous:
		rec.OutputTokens, rec.OutputSource = cum, record.SourceContinuous
	default:
		rec.OutputTokens, rec.OutputSource = rec.ChunkTokens(), record.SourceChunks
	}
	rec.ChunkSource = record.SourceChunks
	if continuous {
		rec.ChunkSource = record.SourceContinuous
	}
	if rec.ReasoningSource == record.SourceNone && thinking > 0 {
		// No count from the server: the reasoning-only chunks' tokens
		// (a chunk with the last of the thinking and the first content
		// counts as content).
		rec.ReasoningTokens, rec.ReasoningSource = thinking, rec.ChunkSource
	}
	if tooling > 0 {
		rec.ToolTokens, rec.ToolSource = tooling, rec.ChunkSource
	}
	return sawFinish
}
