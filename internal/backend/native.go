package backend

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/tokperf/tokperf/internal/record"
)

// tgi is TGI's /generate_stream: one event per token (even when a
// speculative step made several), details with the counts on the last.
type tgi struct{}

func init() {
	natives["tgi"] = func() protocol { return tgi{} }
	natives["llamacpp"] = func() protocol { return llamaCpp{} }
	natives["ollama"] = func() protocol { return ollama{} }
}

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
	Details *struct {
		FinishReason    string `json:"finish_reason"`
		GeneratedTokens int    `json:"generated_tokens"`
		InputLength     int    `json:"input_length"`
	} `json:"details"`
	Error     string `json:"error"`
	ErrorType string `json:"error_type"`
}

func (tgi) read(body io.Reader, clock stamper, rec *record.Record, text *strings.Builder) {
	ev := NewEvents(body)
	var late lag
	sawFinish := false
	for ev.Next() {
		now := clock.Now()
		late.next(ev, clock, rec)
		if string(ev.Data()) == "[DONE]" {
			rec.Done = now
			break
		}
		var e tgiEvent
		if !decode(ev.Data(), &e, rec) {
			return
		}
		if e.Error != "" {
			rec.Status, rec.Error = record.StatusStreamError, "server error in stream: "+e.Error
			return
		}
		if e.Token != nil {
			if text != nil && !e.Token.Special {
				text.WriteString(e.Token.Text)
			}
			rec.AddChunk(now, 1)
			late.chunk(clock)
			if e.Token.Text != "" && !e.Token.Special && rec.FirstContent == record.Unset {
				rec.FirstContent = now
			}
		}
		if d := e.Details; d != nil {
			sawFinish = true
			rec.FinishReason = d.FinishReason
			rec.OutputTokens, rec.OutputSource = d.GeneratedTokens, record.SourceUsage
			if d.InputLength > 0 {
				rec.PromptTokens, rec.PromptSource = d.InputLength, record.SourceUsage
			}
			rec.Done = now // the last event
			break
		}
	}
	if !sawFinish {
		rec.OutputTokens, rec.OutputSource = rec.ChunkTokens(), record.SourceContinuous
	}
	rec.ChunkSource = record.SourceContinuous // one event is one token
	finish(rec, sawFinish, ev.Err())
}

// llamaCpp is llama.cpp's /completion: each event's "tokens" holds the ids
// it carries, the last has stop, stop_type and the server's timings.
type llamaCpp struct{}

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

func (llamaCpp) read(body io.Reader, clock stamper, rec *record.Record, text *strings.Builder) {
	ev := NewEvents(body)
	var late lag
	sawFinish, exact := false, true
	for ev.Next() {
		now := clock.Now()
		late.next(ev, clock, rec)
		if string(ev.Data()) == "[DONE]" {
			rec.Done = now
			break
		}
		var e llamaEvent
		if !decode(ev.Data(), &e, rec) {
			return
		}
		if e.Error != nil {
			rec.Status, rec.Error = record.StatusStreamError, "server error in stream: "+e.Error.Message
			return
		}
		if text != nil {
			text.WriteString(e.Content)
		}
		n, ok := countIDs(e.Tokens)
		if !ok {
			exact = false
			if e.Content != "" {
				n = 1
			}
		}
		if n > 0 {
			rec.AddChunk(now, n)
			late.chunk(clock)
			if e.Content != "" && rec.FirstContent == record.Unset {
				rec.FirstContent = now
			}
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
			rec.Done = now // the last event
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
	finish(rec, sawFinish, ev.Err())
}

// ollama is Ollama's native /api/generate (raw: no template) or /api/chat:
// NDJSON, one piece per line, counts and durations (ns) on the last line.
type ollama struct{ chat bool }

func (o ollama) route() string {
	if o.chat {
		return "/api/chat"
	}
	return "/api/generate"
}

func (o ollama) body(cfg *Config, req *record.Request) ([]byte, error) {
	type options struct {
		NumPredict  int     `json:"num_predict"`
		Temperature float64 `json:"temperature"`
		Seed        int64   `json:"seed,omitempty"`
	}
	opts := options{req.MaxTokens, req.Temperature, req.Seed}
	if o.chat {
		return json.Marshal(struct {
			Model    string          `json:"model"`
			Messages []openAIMessage `json:"messages"`
			Stream   bool            `json:"stream"`
			Options  options         `json:"options"`
		}{cfg.Model, []openAIMessage{{Role: "user", Content: req.Prompt}}, true, opts})
	}
	return json.Marshal(struct {
		Model   string  `json:"model"`
		Prompt  string  `json:"prompt"`
		Raw     bool    `json:"raw"`
		Stream  bool    `json:"stream"`
		Options options `json:"options"`
	}{cfg.Model, req.Prompt, true, true, opts})
}

type ollamaLine struct {
	Response *string `json:"response"`
	Message  *struct {
		Content  string `json:"content"`
		Thinking string `json:"thinking"`
	} `json:"message"`
	Thinking           string `json:"thinking"`
	Done               bool   `json:"done"`
	DoneReason         string `json:"done_reason"`
	PromptEvalCount    int    `json:"prompt_eval_count"`
	PromptEvalDuration int64  `json:"prompt_eval_duration"`
	EvalCount          int    `json:"eval_count"`
	EvalDuration       int64  `json:"eval_duration"`
	TotalDuration      int64  `json:"total_duration"`
	Error              string `json:"error"`
}

func (o ollama) read(body io.Reader, clock stamper, rec *record.Record, text *strings.Builder) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 1<<10), maxEvent)
	sc.Split((&lines{}).split)
	sawFinish := false
	// The run of identical pieces at the end: Ollama ends a stream, with
	// no final line, when one token repeats ollamaRepeatLimit times.
	var last string
	repeats := 0
	for sc.Scan() {
		now := clock.Now()
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var l ollamaLine
		if !decode(line, &l, rec) {
			return
		}
		if l.Error != "" {
			rec.Status, rec.Error = record.StatusStreamError, "server error in stream: "+l.Error
			return
		}
		content, thinking := "", l.Thinking
		if l.Response != nil {
			content = *l.Response
		}
		if l.Message != nil {
			content, thinking = l.Message.Content, thinking+l.Message.Thinking
		}
		if text != nil {
			text.WriteString(content)
		}
		if piece := content + thinking; piece != "" {
			if piece == last {
				repeats++
			} else {
				last, repeats = piece, 1
			}
		}
		if content != "" || thinking != "" {
			rec.AddChunk(now, 1)
			if content != "" && rec.FirstContent == record.Unset {
				rec.FirstContent = now
			}
		}
		if l.Done {
			sawFinish = true
			rec.FinishReason = l.DoneReason
			rec.OutputTokens, rec.OutputSource = l.EvalCount, record.SourceUsage
			rec.PromptTokens, rec.PromptSource = l.PromptEvalCount, record.SourceUsage
			if l.EvalDuration > 0 || l.PromptEvalDuration > 0 {
				// eval_duration is the engine's compute for the tokens after
				// the first (n − 1 of eval_count), summed per step: not the
				// time a reader waits, so it is marked as compute.
				rec.Server = &record.ServerTiming{
					PromptMs: float64(l.PromptEvalDuration) / 1e6, DecodeMs: float64(l.EvalDuration) / 1e6,
					E2EMs: float64(l.TotalDuration) / 1e6, OutputTokens: max(l.EvalCount-1, 0), Compute: true,
				}
			}
			rec.Done = now // the last line
			break
		}
	}
	if !sawFinish {
		rec.OutputTokens, rec.OutputSource = rec.ChunkTokens(), record.SourceChunks
	}
	// One line is one token, except where Ollama held byte tokens back
	// until they made a whole character and sent them as one line: then
	// the lines are fewer than eval_count, and which line holds several
	// is unknown, so the per-chunk counts are assumed, not exact.
	rec.ChunkSource = record.SourceContinuous
	if !sawFinish || rec.ChunkTokens() != rec.OutputTokens {
		rec.ChunkSource = record.SourceChunks
	}
	finish(rec, sawFinish, sc.Err())
	if !sawFinish && rec.Status == record.StatusIncomplete && repeats >= ollamaRepeatLimit {
		rec.Error += fmt.Sprintf(" (%s: the last %d pieces were all %.40q)", ollamaRepeatHint, repeats, last)
	}
}

// Ollama aborts a generation, sending no final line, when one token
// repeats (its llm server's "token repeat limit", 30): a degenerate
// output, not a failed server.
const (
	ollamaRepeatLimit = 30
	ollamaRepeatHint  = "Ollama stops a stream when one token repeats 30 times"
)

// decode unmarshals one event, or marks the record failed on bad JSON.
func decode(data []byte, v any, rec *record.Record) bool {
	if err := json.Unmarshal(data, v); err != nil {
		rec.Status, rec.Error = record.StatusStreamError, fmt.Sprintf("malformed chunk: %v: %.80q", err, data)
		return false
	}
	return true
}

// lines splits like bufio.ScanLines, but a long line that comes in many
// reads is searched once, not from its start after every read.
type lines struct{ searched int }

func (l *lines) split(data []byte, atEOF bool) (int, []byte, error) {
	from := min(l.searched, len(data))
	if i := bytes.IndexByte(data[from:], '\n'); i >= 0 {
		i += from
		l.searched = 0
		return i + 1, bytes.TrimSuffix(data[:i], []byte{'\r'}), nil
	}
	if atEOF {
		l.searched = 0
		if len(data) > 0 {
			return len(data), bytes.TrimSuffix(data, []byte{'\r'}), nil
		}
		return 0, nil, nil
	}
	l.searched = len(data)
	return 0, nil, nil
}
