package backend

import (
	"encoding/json"
	"fmt"

	"github.com/tokperf/tokperf/internal/record"
)

// ollama is Ollama's native /api/generate (raw: no template) or /api/chat:
// NDJSON, one piece per line, counts and durations (ns) on the last line.
type ollama struct{ chat bool }

var (
	_ protocol  = ollama{}
	_ endsEarly = ollama{}
)

func init() {
	natives["ollama"] = func(*Config) protocol { return ollama{} }
	endpoints["api-chat"] = endpoint{"ollama", func(*Config) protocol { return ollama{chat: true} }}
}

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
			Messages []ollamaMessage `json:"messages"`
			Tools    json.RawMessage `json:"tools,omitempty"` // the chat route's shape, as Ollama reads it
			Stream   bool            `json:"stream"`
			Options  options         `json:"options"`
		}{cfg.Model, ollamaMessages(req), req.Tools, true, opts})
	}
	return json.Marshal(struct {
		Model   string  `json:"model"`
		Prompt  string  `json:"prompt"`
		Raw     bool    `json:"raw"`
		Stream  bool    `json:"stream"`
		Options options `json:"options"`
	}{cfg.Model, req.Prompt, true, true, opts})
}

// ollamaMessage is a message of /api/chat: an assistant's tool calls
// carry their arguments as an object, a tool's answer its role "tool".
type ollamaMessage struct {
	Role      string           `json:"role"`
	Content   string           `json:"content"`
	ToolCalls []ollamaToolCall `json:"tool_calls,omitempty"`
}

type ollamaToolCall struct {
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// ollamaMessages is the request's conversation, or its prompt as one
// user turn.
func ollamaMessages(req *record.Request) []ollamaMessage {
	var out []ollamaMessage
	for _, t := range turns(req) {
		m := ollamaMessage{Role: t.role, Content: t.content}
		for _, c := range t.calls {
			var tc ollamaToolCall
			tc.Function.Name, tc.Function.Arguments = c.Name, jsonObject(c.Arguments)
			m.ToolCalls = append(m.ToolCalls, tc)
		}
		out = append(out, m)
	}
	return out
}

type ollamaLine struct {
	Response *string `json:"response"`
	Message  *struct {
		Content   string `json:"content"`
		Thinking  string `json:"thinking"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
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

// framing is NDJSON, not SSE.
func (o ollama) framing() framing { return ndjson }

// endsEarly: a stream on another route is not read for its text, so the
// repeat cannot be checked; the likely cause is named.
func (ollama) endsEarly() string {
	return ollamaRepeatHint + ": a degenerate output ends so, without a finish"
}

func (o ollama) read(s *stream) bool {
	rec := s.rec
	sawFinish := false
	// The run of identical pieces at the end: Ollama ends a stream, with
	// no final line, when one token repeats ollamaRepeatLimit times.
	var last string
	repeats := 0
	spoken := 0 // lines of text or thinking, one token each
	var tools calls
	for s.Next() {
		var l ollamaLine
		if !s.decode(&l) {
			return false
		}
		if l.Error != "" {
			s.fail(l.Error)
			return false
		}
		content, thinking := "", l.Thinking
		if l.Response != nil {
			content = *l.Response
		}
		if l.Message != nil {
			content, thinking = l.Message.Content, thinking+l.Message.Thinking
		}
		if s.text != nil {
			s.text.WriteString(content)
		}
		if piece := content + thinking; piece != "" {
			if piece == last {
				repeats++
			} else {
				last, repeats = piece, 1
			}
		}
		tool := l.Message != nil && len(l.Message.ToolCalls) > 0
		if tool {
			for _, c := range l.Message.ToolCalls {
				tools.add(rec, len(rec.ToolCalls), c.ID, c.Function.Name, argText(c.Function.Arguments))
			}
		}
		if content != "" || thinking != "" || tool {
			s.chunk(1, content != "" || tool)
			if !tool {
				spoken++
			}
		}
		if l.Done {
			sawFinish = true
			ollamaDone(rec, &l)
			s.last()
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
	if len(rec.ToolCalls) > 0 && sawFinish {
		// Ollama parses a call out of the model's text and sends it whole,
		// after the tokens that made it: they are the server's count less
		// the lines of text and thinking, a token each.
		rec.ToolTokens, rec.ToolSource = max(rec.OutputTokens-spoken, 0), record.SourceUsage
	}
	if !sawFinish && repeats >= ollamaRepeatLimit {
		s.why = fmt.Sprintf("%s: the last %d pieces were all %.40q", ollamaRepeatHint, repeats, last)
	}
	return sawFinish
}

// ollamaDone reads the final line: the finish, the counts and the
// server's durations.
func ollamaDone(rec *record.Record, l *ollamaLine) {
	rec.FinishReason = l.DoneReason
	rec.OutputTokens, rec.OutputSource = l.EvalCount, record.SourceUsage
	rec.PromptTokens, rec.PromptSource = l.PromptEvalCount, record.SourceUsage
	if l.EvalDuration > 0 || l.PromptEvalDuration > 0 {
		// eval_duration is the engine's compute for the tokens after the
		// first (n − 1 of eval_count), summed per step: not the time a
		// reader waits, so it is marked as compute.
		rec.Server = &record.ServerTiming{
			PromptMs: float64(l.PromptEvalDuration) / 1e6, DecodeMs: float64(l.EvalDuration) / 1e6,
			E2EMs: float64(l.TotalDuration) / 1e6, OutputTokens: max(l.EvalCount-1, 0), Compute: true,
		}
	}
}

// Ollama aborts a generation, sending no final line, when one token
// repeats (its llm server's "token repeat limit", 30): a degenerate
// output, not a failed server.
const (
	ollamaRepeatLimit = 30
	ollamaRepeatHint  = "Ollama stops a stream when one token repeats 30 times"
)
