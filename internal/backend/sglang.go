package backend

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/tokperf/tokperf/internal/record"
)

// sglang is SGLang's native POST /generate: cumulative text and a cumulative
// meta_info.completion_tokens in every event, so tokens per chunk are exact.
type sglang struct{}

func init() { natives["sglang"] = func() protocol { return sglang{} } }

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
		E2ELatency       float64         `json:"e2e_latency"`
	} `json:"meta_info"`
	Error *streamError `json:"error"`
}

func (sglang) read(body io.Reader, clock stamper, rec *record.Record, text *strings.Builder) {
	ev := NewEvents(body)
	var late lag
	cum, textLen := 0, 0
	sawFinish, counted := false, false
	for ev.Next() {
		now := clock.Now()
		late.next(ev, clock, rec)
		data := ev.Data()
		if string(data) == "[DONE]" {
			rec.Done = now
			break
		}
		var e sglangEvent
		if err := json.Unmarshal(data, &e); err != nil {
			rec.Status, rec.Error = record.StatusStreamError, fmt.Sprintf("malformed chunk: %v: %.80q", err, data)
			return
		}
		if e.Error != nil {
			rec.Status, rec.Error = record.StatusStreamError, "server error in stream: "+e.Error.Message
			return
		}
		m := e.MetaInfo
		counted = true
		if n := m.CompletionTokens - cum; n > 0 {
			rec.AddChunk(now, n)
			late.chunk(clock)
			if len(e.Text) > textLen && rec.FirstContent == record.Unset {
				rec.FirstContent = now
			}
			cum = m.CompletionTokens
		}
		textLen = len(e.Text)
		if text != nil {
			var full string
			if json.Unmarshal(e.Text, &full) == nil {
				text.Reset()
				text.WriteString(full) // cumulative: the last event holds it all
			}
		}
		rec.PromptTokens, rec.PromptSource, rec.CachedTokens = m.PromptTokens, record.SourceUsage, m.CachedTokens
		if len(m.FinishReason) > 0 && string(m.FinishReason) != "null" {
			sawFinish = true
			if m.E2ELatency > 0 {
				rec.Server = &record.ServerTiming{E2EMs: m.E2ELatency * 1e3, OutputTokens: m.CompletionTokens}
			}
			var fr struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(m.FinishReason, &fr) == nil && fr.Type != "" {
				rec.FinishReason = fr.Type
			} else {
				rec.FinishReason = string(m.FinishReason)
			}
			rec.Done = now // the last event: [DONE] may follow, nothing more
			break
		}
	}
	rec.OutputTokens, rec.OutputSource, rec.ChunkSource = cum, record.SourceUsage, record.SourceContinuous
	if !counted {
		rec.OutputSource, rec.ChunkSource = record.SourceNone, record.SourceNone
	}
	finish(rec, sawFinish, ev.Err())
}
