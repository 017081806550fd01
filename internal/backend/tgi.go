package backend

import (
	"encoding/json"

	"github.com/tokperf/tokperf/internal/record"
)

// tgi is TGI's /generate_stream: one event per token (even when a
// speculative step made several), details with the counts on the last.
type tgi struct{}

var _ protocol = tgi{}

func init() { natives["tgi"] = func(*Config) protocol { return tgi{} } }

func (tgi) route() string { return "/generate_stream" }

func (tgi) body(cfg *Config, req *record.Request) ([]byte, error) {
	type params struct {
		MaxNewTokens int      `json:"max_new_tokens"`
		Details      bool     `json:"details"`
		DoSample     bool     `json:"do_sample"`
		Temperature  *float64 `json:"temperature,omitempty"` // TGI rejects 0
		Seed         *int64   `json:"seed,omitempty"`
	}
	p := params{MaxNewTokens: req.MaxTokens, Details: true, DoSample: req.Temperature > 0}
	if req.Temperature > 0 {
		p.Temperature = &req.Temperature
	}
	if req.Seed != 0 {
		p.Seed = &req.Seed
	}
	return json.Marshal(struct {
		Inputs     string `json:"inputs"`
		Parameters params `json:"parameters"`
	}{req.Prompt, p})
}

type tgiEvent struct {
	Token *struct {
		Text    string `json:"text"`
		Special bool   `json:"special"`
	} `json:"token"`
	// GeneratedText is set on the last event only: the stream's end
	// where details are absent (a request or a proxy without them).
	GeneratedText *string `json:"generated_text"`
	Details       *struct {
		FinishReason    string `json:"finish_reason"`
		GeneratedTokens int    `json:"generated_tokens"`
		InputLength     int    `json:"input_length"`
	} `json:"details"`
	Error     string `json:"error"`
	ErrorType string `json:"error_type"`
}

func (tgi) framing() framing { return sse }

func (tgi) read(s *stream) bool {
	rec := s.rec
	sawFinish := false
	for s.Next() {
		var e tgiEvent
		if !s.decode(&e) {
			return false
		}
		if e.Error != "" {
			s.fail(e.Error)
			return false
		}
		if e.Token != nil {
			if s.text != nil && !e.Token.Special {
				s.text.WriteString(e.Token.Text)
			}
			s.chunk(1, e.Token.Text != "" && !e.Token.Special)
		}
		if d := e.Details; d != nil {
			sawFinish = true
			rec.FinishReason = d.FinishReason
			rec.OutputTokens, rec.OutputSource = d.GeneratedTokens, record.SourceUsage
			if d.InputLength > 0 {
				rec.PromptTokens, rec.PromptSource = d.InputLength, record.SourceUsage
			}
			s.last()
			break
		}
		if e.GeneratedText != nil {
			// The end without details: no count and no reason from the
			// server, but the answer is whole.
			sawFinish = true
			rec.OutputTokens, rec.OutputSource = rec.ChunkTokens(), record.SourceContinuous
			s.last()
			break
		}
	}
	if !sawFinish {
		rec.OutputTokens, rec.OutputSource = rec.ChunkTokens(), record.SourceContinuous
	}
	rec.ChunkSource = record.SourceContinuous // one event is one token
	return sawFinish
}
