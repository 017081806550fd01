package backend

import (
	"encoding/json"

	"github.com/tokperf/tokperf/internal/record"
)

// sglang is SGLang's native POST /generate: cumulative text and a cumulative
// meta_info.completion_tokens in every event, so tokens per chunk are exact.
type sglang struct{}

var _ protocol = sglang{}

func init() { natives["sglang"] = func(*Config) protocol { return sglang{} } }

func (sglang) route() string { return "/generate" }

func (sglang) body(cfg *Config, req *record.Request) ([]byte, error) {
	type params struct {
		MaxNewTokens int     `json:"max_new_tokens"`
		IgnoreEOS    bool    `json:"ignore_eos"`
		Temperature  float64 `json:"temperature"`
	}
	return json.Marshal(struct {
		Text           string `json:"text"`
		SamplingParams params `json:"sampling_params"`
		Stream         bool   `json:"stream"`
	}{req.Prompt, params{req.MaxTokens, req.IgnoreEOS, req.Temperature}, true})
}

type sglangEvent struct {
	// Text is cumulative and grows with every event: it is kept raw, as
	// only its growth matters here, so the client never unescapes it.
	Text     json.RawMessage `json:"text"`
	MetaInfo struct {
		FinishReason     json.RawMessage `json:"finish_reason"`
		PromptTokens     int             `json:"prompt_tokens"`
		CompletionTokens int             `json:"completion_tokens"`
		CachedTokens     int             `json:"cached_tokens"`
		ReasoningTokens  int             `json:"reasoning_tokens"`
		E2ELatency       float64         `json:"e2e_latency"`
		// InferenceTime is from the request's first forward step to its
		// end (SGLang with --enable-metrics): e2e_latency less it is the
		// time before, the server's queue.
		InferenceTime float64 `json:"inference_time"`
	} `json:"meta_info"`
	Error *streamError `json:"error"`
}

func (sglang) framing() framing { return sse }

func (sglang) read(s *stream) bool {
	rec := s.rec
	cum, textLen := 0, 0
	sawFinish, counted := false, false
	for s.Next() {
		var e sglangEvent
		if !s.decode(&e) {
			return false
		}
		if e.Error != nil {
			s.fail(e.Error.Message)
			return false
		}
		m := e.MetaInfo
		counted = true
		if n := m.CompletionTokens - cum; n > 0 {
			s.chunk(n, len(e.Text) > textLen)
			cum = m.CompletionTokens
		}
		textLen = len(e.Text)
		if s.text != nil {
			var full string
			if json.Unmarshal(e.Text, &full) == nil {
				s.text.Reset()
				s.text.WriteString(full) // cumulative: the last event holds it all
			}
		}
		rec.PromptTokens, rec.PromptSource, rec.CachedTokens = m.PromptTokens, record.SourceUsage, m.CachedTokens
		if m.ReasoningTokens > 0 {
			rec.ReasoningTokens, rec.ReasoningSource = m.ReasoningTokens, record.SourceUsage
		}
		if len(m.FinishReason) > 0 && string(m.FinishReason) != "null" {
			if m.E2ELatency > 0 {
				rec.Server = &record.ServerTiming{E2EMs: m.E2ELatency * 1e3, OutputTokens: m.CompletionTokens}
				if m.InferenceTime > 0 && m.InferenceTime <= m.E2ELatency {
					rec.Server.QueueMs = (m.E2ELatency - m.InferenceTime) * 1e3
				}
			}
			var fr struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(m.FinishReason, &fr) == nil && fr.Type != "" {
				rec.FinishReason = fr.Type
			} else {
				rec.FinishReason = string(m.FinishReason)
			}
			sawFinish = true
			s.last() // [DONE] may follow, nothing more
			break
		}
	}
	rec.OutputTokens, rec.OutputSource, rec.ChunkSource = cum, record.SourceUsage, record.SourceContinuous
	if !counted {
		rec.OutputSource, rec.ChunkSource = record.SourceNone, record.SourceNone
	}
	return sawFinish
}
