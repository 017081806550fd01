package backend

import (
	"encoding/json"
	"strings"

	"github.com/tokperf/tokperf/internal/record"
)

// llamaCpp is llama.cpp's /completion: each event's "tokens" holds the ids
// it carries, the last has stop, stop_type and the server's timings.
type llamaCpp struct{}

var _ protocol = llamaCpp{}

func init() { natives["llamacpp"] = func(*Config) protocol { return llamaCpp{} } }

func (llamaCpp) route() string { return "/completion" }

func (llamaCpp) body(cfg *Config, req *record.Request) ([]byte, error) {
	return json.Marshal(struct {
		Prompt      string  `json:"prompt"`
		NPredict    int     `json:"n_predict"`
		IgnoreEOS   bool    `json:"ignore_eos"`
		Stream      bool    `json:"stream"`
		CachePrompt bool    `json:"cache_prompt"`
		Temperature float64 `json:"temperature"`
		Seed        int64   `json:"seed,omitempty"`
	}{req.Prompt, req.MaxTokens, req.IgnoreEOS, true, cfg.CachePrompt, req.Temperature, req.Seed})
}

type llamaTimings struct {
	PromptN     int     `json:"prompt_n"`
	PromptMs    float64 `json:"prompt_ms"`
	PredictedN  int     `json:"predicted_n"`
	PredictedMs float64 `json:"predicted_ms"`
	CacheN      int     `json:"cache_n"`
}

// timing turns llama.cpp's timings into the record's server timing.
func (t *llamaTimings) timing() *record.ServerTiming {
	if t == nil || (t.PredictedMs == 0 && t.PromptMs == 0) {
		return nil
	}
	// predicted_ms runs from the first generated token to the last: it
	// covers n − 1 of the predicted_n tokens, as the client's decode time does.
	return &record.ServerTiming{PromptMs: t.PromptMs, DecodeMs: t.PredictedMs, E2EMs: t.PromptMs + t.PredictedMs, OutputTokens: max(t.PredictedN-1, 0)}
}

type llamaEvent struct {
	Content         string          `json:"content"`
	Tokens          json.RawMessage `json:"tokens"`
	Stop            bool            `json:"stop"`
	StopType        string          `json:"stop_type"`
	TokensPredicted int             `json:"tokens_predicted"`
	TokensEvaluated int             `json:"tokens_evaluated"`
	Timings         *llamaTimings   `json:"timings"`
	Error           *streamError    `json:"error"`
}

// countIDs counts the numbers of a JSON array of token ids without decoding it.
func countIDs(raw json.RawMessage) (int, bool) {
	s := strings.TrimSpace(string(raw))
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return 0, false
	}
	s = strings.TrimSpace(s[1 : len(s)-1])
	if s == "" {
		return 0, true
	}
	return strings.Count(s, ",") + 1, true
}

func (llamaCpp) framing() framing { return sse }

func (llamaCpp) read(s *stream) bool {
	rec := s.rec
	sawFinish, exact := false, true
	for s.Next() {
		var e llamaEvent
		if !s.decode(&e) {
			return false
		}
		if e.Error != nil {
			s.fail(e.Error.Message)
			return false
		}
		if s.text != nil {
			s.text.WriteString(e.Content)
		}
		n, ok := countIDs(e.Tokens)
		if !ok {
			exact = false
			if e.Content != "" {
				n = 1
			}
		}
		if n > 0 {
			s.chunk(n, e.Content != "")
		}
		if e.Stop {
			sawFinish = true
			rec.FinishReason = e.StopType
			rec.OutputTokens, rec.OutputSource = e.TokensPredicted, record.SourceUsage
			if e.Timings != nil && e.Timings.PredictedN > 0 {
				rec.OutputTokens = e.Timings.PredictedN
			}
			rec.PromptTokens, rec.PromptSource = e.TokensEvaluated, record.SourceUsage
			if e.Timings != nil {
				rec.CachedTokens = e.Timings.CacheN
			}
			rec.Server = e.Timings.timing()
			s.last()
			break
		}
	}
	if !sawFinish {
		rec.OutputTokens, rec.OutputSource = rec.ChunkTokens(), record.SourceContinuous
	}
	rec.ChunkSource = record.SourceContinuous
	if !exact {
		rec.ChunkSource = record.SourceChunks
	}
	return sawFinish
}
