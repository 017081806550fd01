package workload

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "write the agent trace samples of testdata/agent again")

// The samples' shape, drawn from a seed: sessions of a few turns whose
// prompts grow by the last answer and something new, each turn ending in
// the user's pause, a tool call or (top-level sessions only) a fork of
// sub-agents. Times follow a simple model: a call takes 50 ms and 10 ms
// an output token.
type sampleTurn struct {
	in, out     int
	tool, think time.Duration
	subs        []sampleSession
}

type sampleSession struct {
	id    string
	turns []sampleTurn
}

const sampleBlock = 64

func sampleShape(seed uint64, sessions int) []sampleSession {
	r := rand.New(rand.NewPCG(seed, 39))
	var out []sampleSession
	for s := range sessions {
		out = append(out, sampleOne(r, fmt.Sprintf("s%d", s), true))
	}
	return out
}

func sampleOne(r *rand.Rand, id string, top bool) sampleSession {
	ss := sampleSession{id: id}
	in := 200 + r.IntN(300)
	n := 2 + r.IntN(4)
	for k := range n {
		t := sampleTurn{in: in, out: 10 + r.IntN(60)}
		if k < n-1 {
			switch x := r.Float64(); {
			case top && x < 0.25:
				for j := range 1 + r.IntN(2) {
					t.subs = append(t.subs, sampleOne(r, fmt.Sprintf("%s.%d.%d", id, k, j), false))
				}
			case x < 0.7:
				t.tool = time.Duration(100+r.IntN(900)) * time.Millisecond
			default:
				t.think = time.Duration(500+r.IntN(2000)) * time.Millisecond
			}
		}
		ss.turns = append(ss.turns, t)
		in += t.out + 20 + r.IntN(200)
	}
	return ss
}

func callTime(out int) time.Duration {
	return 50*time.Millisecond + time.Duration(out)*10*time.Millisecond
}

// duration is how long a session takes in the model: its calls, waits
// and sub-agents (the longest of each fork's).
func (s sampleSession) duration() time.Duration {
	var d time.Duration
	for _, t := range s.turns {
		d += callTime(t.out) + t.tool + t.think
		var longest time.Duration
		for _, sub := range t.subs {
			longest = max(longest, sub.duration())
		}
		d += longest
	}
	return d
}

// hashes are a session's turns' blocks of block tokens: each prompt's
// whole blocks of the last prompt and answer shared, then new ones.
func (s sampleSession) hashes(first int64, block int) [][]int64 {
	var out [][]int64
	var last []int64
	next := first
	shared := 0
	for _, t := range s.turns {
		keep := min(min(shared, t.in)/block, len(last))
		h := append([]int64(nil), last[:keep]...)
		for len(h) < (t.in+block-1)/block {
			h = append(h, next)
			next++
		}
		out, last, shared = append(out, h), h, t.in+t.out
	}
	return out
}

// weka writes the sessions as WEKA traces, one a line.
func sampleWeka(shape []sampleSession) []byte {
	type req struct {
		T         float64 `json:"t"`
		Type      string  `json:"type"`
		Model     string  `json:"model,omitempty"`
		In        int     `json:"in,omitempty"`
		Out       int     `json:"out,omitempty"`
		HashIDs   []int64 `json:"hash_ids,omitempty"`
		Stop      string  `json:"stop,omitempty"`
		APITime   float64 `json:"api_time,omitempty"`
		ThinkTime float64 `json:"think_time,omitempty"`
		AgentID   string  `json:"agent_id,omitempty"`
		SubType   string  `json:"subagent_type,omitempty"`
		Status    string  `json:"status,omitempty"`
		Requests  []req   `json:"requests,omitempty"`
	}
	var list func(s sampleSession, at time.Duration, first int64) []req
	list = func(s sampleSession, at time.Duration, first int64) []req {
		var out []req
		hs := s.hashes(first, sampleBlock)
		wait := time.Duration(0)
		for k, t := range s.turns {
			stop := "end_turn"
			if t.tool > 0 {
				stop = "tool_use"
			}
			out = append(out, req{T: at.Seconds(), Type: "s", Model: "m", In: t.in, Out: t.out, HashIDs: hs[k], Stop: stop, APITime: callTime(t.out).Seconds(), ThinkTime: wait.Seconds()})
			at += callTime(t.out)
			var longest time.Duration
			for j, sub := range t.subs {
				out = append(out, req{T: at.Seconds(), Type: "subagent", AgentID: fmt.Sprintf("agent_%d", j), SubType: "Explore", Status: "completed",
					Requests: list(sub, at, first+int64(1000*(k+1)+100*j))})
				longest = max(longest, sub.duration())
			}
			wait = t.tool + t.think
			at += wait + longest
		}
		return out
	}
	var b bytes.Buffer
	for _, s := range shape {
		line, _ := json.Marshal(map[string]any{"id": s.id, "models": []string{"m"}, "block_size": sampleBlock, "hash_id_scope": "local", "requests": list(s, 0, 0)})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// sessions writes the top-level sessions' turns as JSON lines with a
// session id (a format with no sub-agents: a fork's wait is its
// sub-agents' time, the user's to the format).
func sampleSessions(shape []sampleSession) []byte {
	var b bytes.Buffer
	for _, s := range shape {
		hs := s.hashes(int64(len(b.Bytes()))<<8, DefaultBlockSize)
		wait := time.Duration(0)
		for k, t := range s.turns {
			line, _ := json.Marshal(map[string]any{"session_id": s.id, "input_length": t.in, "output_length": t.out, "hash_ids": hs[k], "delay": wait.Milliseconds()})
			b.Write(line)
			b.WriteByte('\n')
			var longest time.Duration
			for _, sub := range t.subs {
				longest = max(longest, sub.duration())
			}
			wait = t.tool + t.think + longest
		}
	}
	return b.Bytes()
}

// otel writes each session as an OTLP export of GenAI spans, one a line:
// an invoke_agent span, a chat span a turn, an execute_tool span over
// each tool's time, and each sub-agent an invoke_agent span under the
// task tool's span, its own chat spans under it.
func sampleOTel(shape []sampleSession) []byte {
	type attr struct {
		Key   string         `json:"key"`
		Value map[string]any `json:"value"`
	}
	type span struct {
		TraceID    string `json:"traceId"`
		SpanID     string `json:"spanId"`
		Parent     string `json:"parentSpanId,omitempty"`
		Name       string `json:"name"`
		Start      string `json:"startTimeUnixNano"`
		End        string `json:"endTimeUnixNano"`
		Attributes []attr `json:"attributes"`
	}
	const epoch = int64(1_767_225_600_000_000_000) // 2026-01-01, ns
	var b bytes.Buffer
	for si, s := range shape {
		trace := fmt.Sprintf("%032x", si+1)
		var spans []span
		n := 0
		add := func(parent, name, op string, from, to time.Duration, attrs ...attr) string {
			n++
			id := fmt.Sprintf("%016x", n)
			spans = append(spans, span{TraceID: trace, SpanID: id, Parent: parent, Name: name,
				Start: fmt.Sprint(epoch + int64(from)), End: fmt.Sprint(epoch + int64(to)),
				Attributes: append([]attr{{"gen_ai.operation.name", map[string]any{"stringValue": op}}}, attrs...)})
			return id
		}
		var agent func(parent string, s sampleSession, at time.Duration)
		agent = func(parent string, s sampleSession, at time.Duration) {
			self := add(parent, "invoke_agent "+s.id, "invoke_agent", at, at+s.duration())
			for _, t := range s.turns {
				end := at + callTime(t.out)
				add(self, "chat m", "chat", at, end, attr{"gen_ai.usage.input_tokens", map[string]any{"intValue": fmt.Sprint(t.in)}},
					attr{"gen_ai.usage.output_tokens", map[string]any{"intValue": fmt.Sprint(t.out)}})
				at = end
				if t.tool > 0 {
					add(self, "execute_tool run", "execute_tool", at, at+t.tool)
				}
				var longest time.Duration
				if len(t.subs) > 0 {
					for _, sub := range t.subs {
						longest = max(longest, sub.duration())
					}
					task := add(self, "execute_tool task", "execute_tool", at, at+longest)
					for _, sub := range t.subs {
						agent(task, sub, at)
					}
				}
				at += t.tool + t.think + longest
			}
		}
		agent("", s, 0)
		line, _ := json.Marshal(map[string]any{"resourceSpans": []any{map[string]any{
			"resource":   map[string]any{"attributes": []attr{{"service.name", map[string]any{"stringValue": "agent"}}}},
			"scopeSpans": []any{map[string]any{"scope": map[string]any{"name": "sample"}, "spans": spans}}}}})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// shapeOf is what a trace read says the sessions were, in the sample's
// terms: turns' lengths and waits, sub-agents under their turns.
func shapeOf(t *AgentTrace) []sampleSession {
	var one func(ts TraceSession) sampleSession
	one = func(ts TraceSession) sampleSession {
		var s sampleSession
		for _, turn := range ts.Turns {
			st := sampleTurn{in: turn.Input, out: turn.Output, tool: turn.Tool, think: turn.Think}
			for _, a := range turn.Agents {
				st.subs = append(st.subs, one(t.Sessions[a]))
			}
			s.turns = append(s.turns, st)
		}
		return s
	}
	var out []sampleSession
	for _, ts := range t.Sessions[:t.Top] {
		out = append(out, one(ts))
	}
	return out
}

// withoutIDs is the shape with its ids blank, and for a format with no
// sub-agents, each fork's wait its sub-agents' time as the user's.
func withoutIDs(shape []sampleSession, flat bool) []sampleSession {
	var out []sampleSession
	for _, s := range shape {
		c := sampleSession{}
		for _, t := range s.turns {
			if flat {
				var longest time.Duration
				for _, sub := range t.subs {
					longest = max(longest, sub.duration())
				}
				t = sampleTurn{in: t.in, out: t.out, think: t.tool + t.think + longest}
			} else {
				t.subs = withoutIDs(t.subs, false)
			}
			c.turns = append(c.turns, t)
		}
		out = append(out, c)
	}
	return out
}

// The shipped samples are the generator's, and each format read back
// gives the shape it was written from: every turn's lengths, every wait
// (a tool's, the user's), every sub-agent with its own turns.
func TestAgentTraceSamples(t *testing.T) {
	t.Parallel()
	shape := sampleShape(39, 6)
	for _, c := range []struct {
		file, format string
		data         []byte
		flat         bool
	}{
		{"weka.jsonl", "weka", sampleWeka(shape), false},
		{"sessions.jsonl", "sessions", sampleSessions(shape), true},
		{"otel.jsonl", "otel", sampleOTel(shape), false},
	} {
		t.Run(c.format, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", "agent", c.file)
			if *update {
				if err := os.WriteFile(path, c.data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			shipped, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(shipped, c.data) {
				t.Fatalf("%s is not the generator's: go test ./internal/workload -run TestAgentTraceSamples -update", path)
			}
			tr, err := LoadAgentTrace(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Check(DefaultBlockSize); err != nil {
				t.Fatal(err)
			}
			if tr.Format != c.format || tr.Top != len(shape) {
				t.Fatalf("read as %s with %d sessions, want %s with %d", tr.Format, tr.Top, c.format, len(shape))
			}
			if d := gocmp.Diff(withoutIDs(shape, c.flat), shapeOf(tr), gocmp.AllowUnexported(sampleSession{}, sampleTurn{})); d != "" {
				t.Errorf("the sessions read differ from the generator's (-want +got):\n%s", d)
			}
			if c.format != "otel" {
				for i, s := range shape {
					for k, h := range s.hashes(0, cmp.Or(tr.BlockSize, DefaultBlockSize)) {
						if got := tr.Sessions[i].Turns[k].Hashes; len(got) != len(h) {
							t.Fatalf("session %d turn %d: %d blocks, want %d", i, k, len(got), len(h))
						}
					}
				}
			}
		})
	}
}

// A bad record is an error naming the file, the line and the field.
func TestAgentTraceErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, text, want string }{
		{"weka in", `{"id":"a","block_size":64,"requests":[{"t":0,"type":"s","in":10,"out":5},{"t":1,"type":"s","in":-3,"out":5}]}`, `x.jsonl:1: field "requests[1].in": want input tokens`},
		{"weka type", "\n\n" + `{"id":"a","requests":[{"t":0,"type":"q","in":10,"out":5}]}`, `x.jsonl:3: field "requests[0].type"`},
		{"weka nested", `{"id":"a","requests":[{"t":0,"type":"s","in":10,"out":5},{"t":0,"type":"subagent","requests":[{"type":"subagent"}]}]}`, `x.jsonl:1: field "requests[1].requests[0].type": want "n" or "s" inside a sub-agent`},
		{"sessions output", `{"session_id":"a","input_length":10,"output_length":5}` + "\n" + `{"session_id":"a","input_length":10,"output_length":0}`, `x.jsonl:2: field "output_length"`},
		{"sessions delay", `{"session_id":"a","input_length":10,"output_length":5,"delay":-1}`, `x.jsonl:1: field "delay": want milliseconds from 0`},
		{"otel tokens", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"t","spanId":"1","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"gen_ai.usage.input_tokens","value":{"intValue":"x"}}]}]}]}]}`,
			`x.jsonl:1: field "resourceSpans[0].scopeSpans[0].spans[0].attributes[0].value.intValue"`},
		{"otel times", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"t","spanId":"1","startTimeUnixNano":"5","endTimeUnixNano":"2"}]}]}]}`,
			`field "resourceSpans[0].scopeSpans[0].spans[0].endTimeUnixNano"`},
		{"not json", `{"session_id": `, `x.jsonl:1: invalid JSON`},
		{"unknown", `{"prompt":"hi"}`, `x.jsonl:1: not an agent trace`},
		{"empty", ``, `x.jsonl: no sessions`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := ReadAgentTrace(strings.NewReader(c.text), "x.jsonl")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}
