package sim

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
)

// offered is a tool a request sent: its name and its parameters' required
// properties, in order.
type offered struct {
	name     string
	required []string
}

// toolSpec reads one tool's name and parameters' required list, in any
// route's shape: chat's {"function": {"name", "parameters"}}, the
// Responses API's flat {"name", "parameters"}, the Messages API's
// {"name", "input_schema"}.
type toolSpec struct {
	Name     string `json:"name"`
	Function *struct {
		Name       string     `json:"name"`
		Parameters schemaReqs `json:"parameters"`
	} `json:"function"`
	Parameters  schemaReqs `json:"parameters"`
	InputSchema schemaReqs `json:"input_schema"`
}

type schemaReqs struct {
	Required []string `json:"required"`
}

func (t toolSpec) offered() offered {
	if f := t.Function; f != nil {
		return offered{f.Name, f.Parameters.Required}
	}
	req := t.Parameters.Required
	if req == nil {
		req = t.InputSchema.Required
	}
	return offered{t.Name, req}
}

func offers(specs []toolSpec) []offered {
	var out []offered
	for _, t := range specs {
		out = append(out, t.offered())
	}
	return out
}

// readChoice reads tool_choice in any route's shape into what the
// simulator acts on: "none", "required" (a call is made), a tool's name
// (that call is made), or "" (auto).
func readChoice(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "none":
			return "none"
		case "required", "any":
			return "required"
		}
		return ""
	}
	var c struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &c) != nil {
		return ""
	}
	switch {
	case c.Function.Name != "":
		return "=" + c.Function.Name
	case c.Name != "":
		return "=" + c.Name
	case c.Type == "none":
		return "none"
	case c.Type == "any":
		return "required"
	}
	return ""
}

// callTool decides, from the request's key, whether g's turn answers with
// a tool call and of which tool (Profile.Tools), and sets g.tool and
// g.required.
func (s *Server) callTool(g *gen, key uint64) {
	t := s.p.tools()
	if t == nil || len(g.tools) == 0 || g.choice == "none" {
		return
	}
	r := rand.New(rand.NewPCG(key, 0x7001))
	if g.choice == "" && !(r.Float64() < t.Probability) {
		return
	}
	pick := g.tools[r.IntN(len(g.tools))]
	if name, ok := strings.CutPrefix(g.choice, "="); ok {
		pick = offered{name: name}
		for _, o := range g.tools {
			if o.name == name {
				pick = o
			}
		}
	}
	if s.p.Wire.WrongAnswers {
		// A broken deployment: the call names no tool that was sent and
		// its arguments lack what the schema requires.
		pick = offered{name: pick.name + "_unknown"}
	}
	g.tool, g.required = pick.name, pick.required
}

// tools is the profile's tools option, wire.tool_calls read as its
// shorthand (a profile built in code may set only that).
func (p *Profile) tools() *Tools {
	if p.Tools == nil && p.Wire.ToolCalls {
		return &Tools{Probability: 1}
	}
	return p.Tools
}

// callLength is a tool turn's output length: its reasoning, then
// ArgumentsTokens tokens of arguments, up to the max tokens.
func (s *Server) callLength(length int, g *gen) int {
	if g.tool == "" || s.p.tools().ArgumentsTokens == 0 {
		return length
	}
	think := 0
	if r := s.p.Reasoning; r != nil && g.chat {
		think = r.Tokens
	}
	return min(think+s.p.Tools.ArgumentsTokens, g.maxTokens)
}

// piece is an event's new text cut by channel: what is still reasoning
// (the profile's first reasoning tokens, on the chat-like routes), and
// the rest, content or, in a tool turn, the call's argument text; head
// says the rest opens the call.
type piece struct {
	thinking, rest string
	head           bool
}

// cut cuts an event's new text by channel. In a tool turn the arguments
// are a JSON object: its opening goes before the first token after the
// reasoning, the close after the last event's.
func (s *Server) cut(x *exchange, ev Event, text []byte) piece {
	n := 0
	if r := s.p.Reasoning; r != nil && x.g.chat {
		n = min(max(r.Tokens-(ev.Total-ev.Tokens), 0), ev.Tokens)
	}
	at := 0
	if n > 0 {
		at = tokenCut(text, n)
	}
	p := piece{thinking: string(text[:at]), rest: string(text[at:])}
	if x.g.tool == "" {
		return p
	}
	if p.rest != "" {
		p.rest = jsonText(p.rest)
		if !x.opened {
			p.rest, p.head, x.opened = x.g.argsHead()+p.rest, true, true
		}
	}
	if ev.Done && x.opened {
		p.rest += x.g.argsTail()
	}
	return p
}

// whole cuts a whole answer by channel, as cut does its events.
func (s *Server) whole(x *exchange, ev Event) piece {
	y := *x
	y.opened = false
	return s.cut(&y, Event{Tokens: ev.Total, Total: ev.Total, Done: true}, x.text)
}

// reasoned is how many of total output tokens were reasoning.
func (s *Server) reasoned(g *gen, total int) int {
	if r := s.p.Reasoning; r != nil && g.chat {
		return min(r.Tokens, total)
	}
	return 0
}

// argsHead opens a call's arguments: the first required property (or
// "text") takes the output's words.
func (g *gen) argsHead() string {
	key := "text"
	if len(g.required) > 0 {
		key = g.required[0]
	}
	k, _ := json.Marshal(key)
	return "{" + string(k) + `:"`
}

// argsTail closes them, the other required properties empty.
func (g *gen) argsTail() string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range g.required {
		if i > 0 {
			k, _ := json.Marshal(r)
			b.WriteString("," + string(k) + `:""`)
		}
	}
	b.WriteByte('}')
	return b.String()
}

// jsonText is s escaped for the inside of a JSON string.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}
