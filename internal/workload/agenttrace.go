package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/tokperf/tokperf/internal/infile"
)

// AgentTrace is agent sessions read from a trace: each session's turns
// with their lengths and prompt blocks (hash ids, a block's hash standing
// for it and every block before it, as in a Mooncake trace), and what it
// waited for after each turn: a tool, the user, or sub-agent sessions.
// Three formats are read, told apart by content (ReadAgentTrace):
//
//   - "weka": the agentic coding traces SemiAnalysis's agentic scenario
//     replays (WEKA's KV-cache tester): one JSON object a session,
//     {"id", "block_size", "requests": [{"t", "type": "n"|"s", "in",
//     "out", "hash_ids", "stop", "think_time"}, {"type": "subagent",
//     "requests": […]}]}, times in seconds; a turn whose stop is
//     "tool_use" ended in a tool call.
//   - "sessions": JSON Lines of turns with a session, as AIPerf's
//     mooncake_trace takes them: {"session_id", "input_length",
//     "output_length", "hash_ids", "delay" (ms after the last turn
//     ended)}; timestamps are not read: sessions run -c at a time.
//   - "otel": OpenTelemetry GenAI spans of agent runs as the OTLP JSON
//     exporters write them ({"resourceSpans": [{"scopeSpans": [{"spans":
//     […]}]}]}, one export a line or one in all): invoke_agent spans are
//     sessions (one inside another a sub-agent), chat spans their turns
//     (gen_ai.usage.input_tokens, output_tokens), execute_tool spans the
//     tool time between them. They carry no hash ids: a turn's blocks are
//     its session's before it, as far as its prompt holds the last
//     prompt and answer, then blocks of its own.
type AgentTrace struct {
	Name   string
	Format string
	// BlockSize is the tokens of a hash id's block the trace gives
	// (weka), 0 when it gives none.
	BlockSize int
	// Sessions are the top-level sessions, the first Top, then the
	// sub-agents they fork.
	Sessions []TraceSession
	Top      int
	// Dropped counts sub-agents of sub-agents, which are not replayed.
	Dropped int

	subs []TraceSession // the sub-agents, while reading
}

// TraceSession is one session of an agent trace.
type TraceSession struct {
	ID    string
	Line  int // where it starts in the file
	Turns []TraceTurn
}

// TraceTurn is one model call of a session and what the session waited
// for after it, before its next: Tool (the turn ended in a tool call),
// Think (the user's), or Agents (sub-agent sessions, indexes into
// AgentTrace.Sessions, run at once and awaited).
type TraceTurn struct {
	Input, Output int
	Hashes        []int64
	Tool, Think   time.Duration
	Agents        []int
}

// LoadAgentTrace reads the agent trace file path.
func LoadAgentTrace(path string) (*AgentTrace, error) {
	f, err := infile.Open(context.Background(), path, infile.Records)
	if err != nil {
		return nil, fmt.Errorf("agent trace: %w", err)
	}
	defer f.Close()
	return ReadAgentTrace(f, path)
}

// ReadAgentTrace reads an agent trace, its format told by its first
// object's keys: "requests" (weka), "resourceSpans" (otel), "session_id"
// (sessions). Objects may be one a line or spread over lines. The first
// error names the file, the line and the field.
func ReadAgentTrace(r io.Reader, name string) (*AgentTrace, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	t := &AgentTrace{Name: name}
	var o otelSpans
	var s sessionLines
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		for off := dec.InputOffset(); off < int64(len(b)) && isSpace(b[off]); off++ {
		}
		start := int(dec.InputOffset())
		line := 1 + bytes.Count(b[:start], []byte("\n")) + leadingLines(b[start:])
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s:%d: invalid JSON: %v", name, line, err)
		}
		obj, err := object(raw, "")
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if t.Format == "" {
			if t.Format = agentFormat(obj); t.Format == "" {
				return nil, fmt.Errorf("%s:%d: not an agent trace: want a WEKA session (\"requests\"), OTLP spans (\"resourceSpans\") or turns with a \"session_id\"", name, line)
			}
		}
		switch t.Format {
		case "weka":
			err = t.weka(raw, line)
		case "otel":
			err = o.add(raw)
		case "sessions":
			err = s.add(obj, line)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
	switch t.Format {
	case "":
		return nil, fmt.Errorf("%s: no sessions (want an agent trace: WEKA sessions, OTLP GenAI spans or session turns)", name)
	case "otel":
		if err := o.sessions(t); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	case "sessions":
		s.sessions(t)
	}
	t.place()
	if t.Top == 0 {
		return nil, fmt.Errorf("%s: no session has a model call", name)
	}
	return t, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// leadingLines counts the newlines before b's first non-space byte.
func leadingLines(b []byte) int {
	n := 0
	for _, c := range b {
		if !isSpace(c) {
			break
		}
		if c == '\n' {
			n++
		}
	}
	return n
}

func agentFormat(obj map[string]json.RawMessage) string {
	switch {
	case obj["requests"] != nil:
		return "weka"
	case obj["resourceSpans"] != nil:
		return "otel"
	case obj["session_id"] != nil:
		return "sessions"
	}
	return ""
}

// seconds is a duration of s seconds, an error naming field when it is
// not a finite number from 0.
func seconds(s float64, field string) (time.Duration, error) {
	if !(s >= 0) || s > 1e9 {
		return 0, &FieldError{field, "seconds from 0"}
	}
	return secs(s), nil
}

// secs is s seconds to the microsecond (a float's seconds are not exact).
func secs(s float64) time.Duration { return time.Duration(math.Round(s*1e6)) * time.Microsecond }

// wekaRequest is a WEKA trace's entry: a model call or a sub-agent.
type wekaRequest struct {
	T         *float64      `json:"t"`
	Type      string        `json:"type"`
	In        *int          `json:"in"`
	Out       *int          `json:"out"`
	HashIDs   []int64       `json:"hash_ids"`
	Stop      string        `json:"stop"`
	APITime   *float64      `json:"api_time"`
	ThinkTime *float64      `json:"think_time"`
	Requests  []wekaRequest `json:"requests"`
}

// weka reads one WEKA session and its sub-agents.
func (t *AgentTrace) weka(raw json.RawMessage, line int) error {
	var s struct {
		ID        string        `json:"id"`
		BlockSize int           `json:"block_size"`
		Requests  []wekaRequest `json:"requests"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return typeError(err)
	}
	if s.BlockSize < 0 || s.BlockSize > MaxLength || (t.BlockSize > 0 && s.BlockSize > 0 && s.BlockSize != t.BlockSize) {
		return &FieldError{"block_size", fmt.Sprintf("tokens from 1 to %d, the same in every session", MaxLength)}
	}
	if s.BlockSize > 0 {
		t.BlockSize = s.BlockSize
	}
	// A session's hash ids are its own (WEKA's scope is local): they are
	// kept apart from other sessions' in their top bits.
	scope := int64(t.Top+1) << 40
	top, subs, err := wekaTurns(s.Requests, "requests", scope, true)
	if err != nil {
		return err
	}
	if len(top) == 0 {
		return nil
	}
	for k := range top {
		for j := range top[k].Agents {
			top[k].Agents[j] = len(t.subs)
			t.subs = append(t.subs, TraceSession{ID: fmt.Sprintf("%s/%d", s.ID, len(t.subs)), Line: line, Turns: subs[0]})
			subs = subs[1:]
		}
	}
	t.Sessions = append(t.Sessions, TraceSession{ID: s.ID, Line: line, Turns: top})
	t.Top++
	return nil
}

// place puts the sub-agents after the top-level sessions, their indexes
// moved on by Top.
func (t *AgentTrace) place() {
	for i := range t.Sessions {
		for k := range t.Sessions[i].Turns {
			for j := range t.Sessions[i].Turns[k].Agents {
				t.Sessions[i].Turns[k].Agents[j] += t.Top
			}
		}
	}
	t.Sessions = append(t.Sessions, t.subs...)
	t.subs = nil
}

// wekaTurns reads a list of WEKA entries into turns and, when top, the
// turns of the sub-agents each turn forks (in order; their indexes are
// filled in by the caller). A sub-agent inside a sub-agent is refused.
func wekaTurns(rs []wekaRequest, path string, scope int64, top bool) ([]TraceTurn, [][]TraceTurn, error) {
	var turns []TraceTurn
	var subs [][]TraceTurn
	end := math.NaN() // the last turn's end, seconds
	for i, r := range rs {
		p := index(path, i)
		switch r.Type {
		case "n", "s":
		case "subagent":
			if !top {
				return nil, nil, &FieldError{p + ".type", `"n" or "s" inside a sub-agent`}
			}
			inner, _, err := wekaTurns(r.Requests, p+".requests", scope|int64(len(subs)+1)<<32, false)
			if err != nil {
				return nil, nil, err
			}
			if len(turns) == 0 || len(inner) == 0 {
				continue // nothing forked it, or nothing to replay
			}
			turns[len(turns)-1].Agents = append(turns[len(turns)-1].Agents, 0)
			subs = append(subs, inner)
			continue
		default:
			return nil, nil, &FieldError{p + ".type", `"n", "s" or "subagent"`}
		}
		turn, err := wekaTurn(r, p, scope)
		if err != nil {
			return nil, nil, err
		}
		if n := len(turns); n > 0 {
			wait := time.Duration(0)
			if r.ThinkTime != nil {
				if wait, err = seconds(*r.ThinkTime, p+".think_time"); err != nil {
					return nil, nil, err
				}
			} else if r.T != nil && !math.IsNaN(end) {
				wait = secs(max(*r.T-end, 0))
			}
			last := &turns[n-1]
			switch {
			case len(last.Agents) > 0:
			case rs[i-1].Stop == "tool_use" || last.Tool > 0:
				last.Tool = wait
			default:
				last.Think = wait
			}
		}
		if r.T != nil && r.APITime != nil {
			end = *r.T + *r.APITime
		}
		turns = append(turns, turn)
	}
	return turns, subs, nil
}

// wekaTurn is one WEKA model call.
func wekaTurn(r wekaRequest, p string, scope int64) (TraceTurn, error) {
	if r.In == nil || *r.In < 1 || *r.In > MaxLength {
		return TraceTurn{}, &FieldError{p + ".in", fmt.Sprintf("input tokens from 1 to %d", MaxLength)}
	}
	if r.Out == nil || *r.Out < 0 || *r.Out > MaxLength {
		return TraceTurn{}, &FieldError{p + ".out", fmt.Sprintf("output tokens from 0 to %d", MaxLength)}
	}
	if len(r.HashIDs) > MaxTraceHashes {
		return TraceTurn{}, &FieldError{p + ".hash_ids", fmt.Sprintf("at most %d blocks", MaxTraceHashes)}
	}
	turn := TraceTurn{Input: *r.In, Output: max(*r.Out, 1)}
	for j, h := range r.HashIDs {
		if h < 0 || h >= 1<<32 {
			return TraceTurn{}, &FieldError{index(p+".hash_ids", j), "a whole number from 0 below 2^32"}
		}
		turn.Hashes = append(turn.Hashes, scope|h)
	}
	return turn, nil
}

// typeError names the field a JSON value of the wrong type was in.
func typeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &FieldError{te.Field, "a " + te.Type.String() + ", not a JSON " + te.Value}
	}
	return err
}

// sessionLines gathers a sessions trace's turns by session.
type sessionLines struct {
	order []string
	by    map[string]*TraceSession
}

func (s *sessionLines) add(obj map[string]json.RawMessage, line int) error {
	id, err := str(obj["session_id"], "session_id")
	if err != nil {
		return err
	}
	var turn TraceTurn
	if turn.Input, err = traceLength(obj, "input_length"); err != nil {
		return err
	}
	if turn.Output, err = traceLength(obj, "output_length"); err != nil {
		return err
	}
	if raw := obj["hash_ids"]; !isNull(raw) {
		items, err := array(raw, "hash_ids")
		if err != nil {
			return err
		}
		for i, it := range items {
			h, err := strconv.ParseInt(string(it), 10, 64)
			if err != nil || h < 0 {
				return &FieldError{index("hash_ids", i), "a whole number from 0"}
			}
			turn.Hashes = append(turn.Hashes, h)
		}
	}
	var delay float64
	if raw := obj["delay"]; !isNull(raw) {
		if json.Unmarshal(raw, &delay) != nil || !(delay >= 0) || delay > 1e12 {
			return &FieldError{"delay", "milliseconds from 0"}
		}
	}
	if s.by == nil {
		s.by = map[string]*TraceSession{}
	}
	sess := s.by[id]
	if sess == nil {
		sess = &TraceSession{ID: id, Line: line}
		s.by[id] = sess
		s.order = append(s.order, id)
	} else {
		sess.Turns[len(sess.Turns)-1].Think = time.Duration(delay * float64(time.Millisecond))
	}
	sess.Turns = append(sess.Turns, turn)
	return nil
}

func (s *sessionLines) sessions(t *AgentTrace) {
	for _, id := range s.order {
		t.Sessions = append(t.Sessions, *s.by[id])
	}
	t.Top = len(t.Sessions)
}

// IsAgentTrace says whether the file path begins with an agent trace's
// object (what ReadAgentTrace reads), not a Mooncake trace's line.
func IsAgentTrace(path string) bool {
	f, err := infile.Open(context.Background(), path, infile.Records)
	if err != nil {
		return false
	}
	defer f.Close()
	var obj map[string]json.RawMessage
	if json.NewDecoder(f).Decode(&obj) != nil {
		return false
	}
	return agentFormat(obj) != ""
}
