package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// Agent is the shape of generated agent sessions (Options.Agent): how many
// turns a session has, which end in a tool call, how long the tool takes,
// how long its result is, which calls fork sub-agents, and what every
// session shares. The shape is drawn from the seed, not from what the
// model answers, so the same session makes the same requests on any
// server (as the published agent benchmarks replay theirs).
type Agent struct {
	Turns     Lengths // a session's own turns (its sub-agents' aside)
	ToolShare float64 // share of turns, the last aside, that end in a tool call
	ToolMs    Lengths // the tool's time, in milliseconds
	Result    Lengths // a tool result's tokens
	Fork      float64 // share of tool calls that start sub-agents instead
	Agents    int     // sub-agents a fork starts, run at once
	System    int     // tokens of the system prompt every session shares
	// Bust puts a line of its own at the start of each session's system
	// prompt, so that no session's first turn is served from another's
	// prefix cache (SemiAnalysis's first-turn cache-bust); the later turns
	// still find their own history cached.
	Bust bool
}

// DefaultAgent is the shape `--agent default` asks for: a coding agent's
// session of about eight turns, most ending in a tool call.
const DefaultAgent = "turns=8:lognormal:0.5,tools=0.7,tool-time=1s:lognormal:0.8,result=400:lognormal:1,fork=0.1,agents=2,system=2000"

const agentWant = "want KEY=VALUE,… of turns=DIST, tools=SHARE, tool-time=DURATION[:lognormal:S|:normal:SD]|MIN-MAX, result=DIST, fork=SHARE, agents=K, system=TOKENS, bust; or default"

// ParseAgent reads an agent shape, `turns=8:lognormal:0.5,tools=0.7,…`
// (DefaultAgent's keys; a key left out keeps its default value, `bust`
// alone sets Bust), or `default`.
func ParseAgent(spec string) (Agent, error) {
	a, err := parseAgent(DefaultAgent, Agent{})
	if err != nil {
		return Agent{}, err
	}
	if spec == "default" {
		return a, nil
	}
	return parseAgent(spec, a)
}

func parseAgent(spec string, a Agent) (Agent, error) {
	if strings.TrimSpace(spec) == "" {
		return Agent{}, errors.New(agentWant)
	}
	for _, kv := range strings.Split(spec, ",") {
		key, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		if err := a.set(key, v); err != nil {
			return Agent{}, fmt.Errorf("%s: %w", key, err)
		}
	}
	return a, nil
}

// set is one key of the shape.
func (a *Agent) set(key, v string) error {
	var err error
	switch key {
	case "turns":
		a.Turns, err = ParseLengths(v)
	case "tools":
		a.ToolShare, err = share(v)
	case "tool-time":
		a.ToolMs, err = durations(v)
	case "result":
		a.Result, err = ParseLengths(v)
	case "fork":
		a.Fork, err = share(v)
	case "agents":
		a.Agents, err = strconv.Atoi(v)
		if err == nil && (a.Agents < 1 || a.Agents > 64) {
			err = fmt.Errorf("%d sub-agents: want 1 to 64", a.Agents)
		}
	case "system":
		a.System, err = strconv.Atoi(v)
		if err == nil && (a.System < 0 || a.System > MaxLength) {
			err = fmt.Errorf("%d tokens: want 0 to %d", a.System, MaxLength)
		}
	case "bust":
		a.Bust = v == "" || v == "true"
	default:
		return errors.New("unknown key: " + agentWant)
	}
	return err
}

func share(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1 {
		return 0, fmt.Errorf("%q: want a share from 0 to 1", v)
	}
	return f, nil
}

// durations reads a distribution of durations (`1s:lognormal:0.8`,
// `200ms-2s`) as one of milliseconds.
func durations(v string) (Lengths, error) {
	ms := func(s string) (string, error) {
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Millisecond {
			return "", fmt.Errorf("%q: want a duration of 1ms or more, as 1s or 250ms", s)
		}
		return strconv.FormatInt(d.Milliseconds(), 10), nil
	}
	head, tail, spread := strings.Cut(v, ":")
	lo, hi, ranged := strings.Cut(head, "-")
	a, err := ms(lo)
	if err != nil {
		return Lengths{}, err
	}
	spec := a
	if ranged {
		b, err := ms(hi)
		if err != nil {
			return Lengths{}, err
		}
		spec += "-" + b
	}
	if spread {
		spec += ":" + tail
	}
	return ParseLengths(spec)
}

// String is the shape as ParseAgent reads it.
func (a Agent) String() string {
	s := fmt.Sprintf("turns=%s,tools=%g,tool-time=%s,result=%s,fork=%g,agents=%d,system=%d",
		a.Turns, a.ToolShare, msSpec(a.ToolMs), a.Result, a.Fork, a.Agents, a.System)
	if a.Bust {
		s += ",bust"
	}
	return s
}

// msSpec writes a distribution of milliseconds with its unit.
func msSpec(l Lengths) string {
	s := l.String()
	head, tail, spread := strings.Cut(s, ":")
	lo, hi, ranged := strings.Cut(head, "-")
	out := lo + "ms"
	if ranged {
		out += "-" + hi + "ms"
	}
	if spread {
		out += ":" + tail
	}
	return out
}

// The seeded draws of a session's shape, apart for each use.
const (
	drawTurns  = 0x7a01
	drawTool   = 0x7a02
	drawResult = 0x7a03
	drawCall   = 0x7a04

	streamSystem = 1<<62 | 1
	streamBust   = 1 << 59
	streamResult = 1 << 61
)

// A sub-agent's session id: its parent's id, the turn that forked it and
// its place among the fork's, above agentBit. Sub-agents fork none of
// their own, so a top-level session's id stays below 2^30.
const agentBit = 1 << 50

func agentID(s, k, j int) int { return agentBit | s<<20 | (k&1023)<<10 | j&1023 }

// Parent is the session that forked session s, and whether it is a
// sub-agent's.
func Parent(s int) (int, bool) { return s &^ agentBit >> 20, s&agentBit != 0 }

// agentTurns is session s's own turns.
func (w *Workload) agentTurns(s int) int {
	if w.o.AgentTrace != nil {
		return w.traceTurns(s)
	}
	return max(w.o.Agent.Turns.At(w.seed^drawTurns, s), 1)
}

// call is what ends turn k of session s: no tool call (the user's turn is
// next), a tool's call, or a fork of sub-agents.
func (w *Workload) call(s, k int) (tool bool, fork bool) {
	if k >= w.agentTurns(s)-1 {
		return false, false
	}
	r := rand.New(rand.NewPCG(uint64(w.seed)^drawCall, uint64(turnIndex(s, k))))
	tool = r.Float64() < w.o.Agent.ToolShare
	_, sub := Parent(s)
	return tool, tool && !sub && r.Float64() < w.o.Agent.Fork
}

// Sessions is a workload of agent sessions, as the runner sends them
// (runner.Sessions).
type Sessions struct{ *Workload }

// Sessions is w as agent sessions, when it is.
func (w *Workload) Sessions() (Sessions, bool) {
	return Sessions{w}, (w.o.Agent != nil || w.o.AgentTrace != nil) && w.Conversational()
}

// After is what session s waits for after its turn k (from 0), before
// the next: the tool's time, or the sub-agent sessions it forks (run at
// once, and waited for; the calls' results follow), or the user's think
// time (generated sessions: none of their own, Plan.Think is the wait).
// Nothing after the last turn.
func (a Sessions) After(s, k int) (tool, think time.Duration, agents []int) {
	w := a.Workload
	if w.o.AgentTrace != nil {
		return w.traceAfter(s, k)
	}
	call, fork := w.call(s, k)
	switch {
	case fork:
		for j := range w.o.Agent.Agents {
			agents = append(agents, agentID(s, k, j))
		}
		return 0, 0, agents
	case call:
		return time.Duration(w.o.Agent.ToolMs.At(w.seed^drawTool, turnIndex(s, k))) * time.Millisecond, 0, nil
	}
	return 0, 0, nil
}

// agentTools is the tool definitions every session sends.
var agentTools = json.RawMessage(`[` +
	`{"type":"function","function":{"name":"read_file","description":"Read a file of the repository.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},` +
	`{"type":"function","function":{"name":"run","description":"Run a shell command and return its output.","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}},` +
	`{"type":"function","function":{"name":"search","description":"Search the repository for text.","parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}},` +
	`{"type":"function","function":{"name":"task","description":"Give a task to a sub-agent and return its answer.","parameters":{"type":"object","properties":{"prompt":{"type":"string"}},"required":["prompt"]}}}]`)

var toolNames = [...]string{"read_file", "run", "search"}

// agentTurn is turn k of agent session s: the shared system prompt, the
// session's first user message, and after each earlier turn its reply
// (answers[j] with own answers) and what came next: the tool call's
// results, or the user's next message.
func (w *Workload) agentTurn(s, k int, answers []string) record.Request {
	if w.o.AgentTrace != nil {
		return w.traceTurn(s, k)
	}
	a := w.o.Agent
	req := record.Request{IgnoreEOS: w.o.IgnoreEOS, Temperature: w.o.Temperature, PromptSource: w.source(),
		MaxTokens: w.o.Output.At(w.seed^streamOutput, turnIndex(s, k)), Tools: agentTools}
	system, _ := w.textOf(streamSystem, max(a.System, 1), "")
	if a.Bust {
		head, _ := w.textOf(streamBust|uint64(s), 8, "")
		system = head + "\n" + system
	}
	req.Messages = append(req.Messages, record.Message{Role: "system", Content: system}, w.user(s, 0))
	for j := range k {
		idx := turnIndex(s, j)
		reply, _ := w.textOf(streamReply|uint64(idx), w.o.Output.At(w.seed^streamOutput, idx), "")
		if j < len(answers) && w.o.OwnAnswers {
			reply = strings.TrimSpace(answers[j])
		}
		call, fork := w.call(s, j)
		if !call {
			req.Messages = append(req.Messages, record.Message{Role: "assistant", Content: reply}, w.user(s, j+1))
			continue
		}
		n := 1
		if fork {
			n = a.Agents
		}
		req.Messages = append(req.Messages, w.toolCalls(s, j, n, fork, reply)...)
	}
	req.Prompt = transcript(req.Messages, true)
	if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
		req.Prompt += "\n\nassistant:"
	}
	req.PromptTokens = w.count(req.Prompt)
	return req
}

// user is session s's user message before its turn k.
func (w *Workload) user(s, k int) record.Message {
	idx := turnIndex(s, k)
	text, _ := w.text(idx, w.o.Input.At(w.seed, idx), "")
	return record.Message{Role: "user", Content: text}
}

// toolCalls are the messages after turn j of session s when it ended in
// n tool calls (of the task tool when it forked sub-agents): the
// assistant's message with its reply and calls, then each call's result.
func (w *Workload) toolCalls(s, j, n int, fork bool, reply string) []record.Message {
	type function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type call struct {
		ID       string   `json:"id"`
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	idx := turnIndex(s, j)
	var calls []call
	var results []record.Message
	for i := range n {
		id := fmt.Sprintf("call_%d_%d_%d", s, j, i)
		name := toolNames[(idx+i)%len(toolNames)]
		if fork {
			name = "task"
		}
		args, _ := json.Marshal(map[string]string{"input": fmt.Sprintf("step %d.%d", j+1, i+1)})
		calls = append(calls, call{ID: id, Type: "function", Function: function{Name: name, Arguments: string(args)}})
		stream := streamResult | uint64(idx)<<6 | uint64(i)
		text, _ := w.textOf(stream, w.o.Agent.Result.At(w.seed^drawResult, int(stream&^streamResult)), "")
		raw, _ := json.Marshal(map[string]string{"role": "tool", "tool_call_id": id, "content": text})
		results = append(results, record.Message{Role: "tool", Content: text, Raw: raw})
	}
	raw, _ := json.Marshal(map[string]any{"role": "assistant", "content": reply, "tool_calls": calls})
	return append([]record.Message{{Role: "assistant", Content: reply, Raw: raw}}, results...)
}
