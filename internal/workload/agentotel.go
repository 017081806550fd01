package workload

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// otelSpan is one span of an OTLP export, with the GenAI attributes an
// agent trace needs.
type otelSpan struct {
	trace, id, parent string
	op                string // gen_ai.operation.name
	start, end        int64  // ns
	in, out           int    // gen_ai.usage.input_tokens, output_tokens
	line              string // where it was read: resourceSpans[i]…
}

// otelSpans gathers an OTLP file's spans.
type otelSpans struct{ spans []otelSpan }

// otelNumber is a number OTLP JSON writes as a string or as a number.
type otelNumber string

func (n *otelNumber) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*n = otelNumber(s)
		return nil
	}
	*n = otelNumber(b)
	return nil
}

func (n otelNumber) int() (int64, bool) {
	v, err := strconv.ParseInt(string(n), 10, 64)
	return v, err == nil && v >= 0
}

type otelExport struct {
	ResourceSpans []struct {
		ScopeSpans []struct {
			Spans []struct {
				TraceID      string     `json:"traceId"`
				SpanID       string     `json:"spanId"`
				ParentSpanID string     `json:"parentSpanId"`
				Start        otelNumber `json:"startTimeUnixNano"`
				End          otelNumber `json:"endTimeUnixNano"`
				Attributes   []struct {
					Key   string `json:"key"`
					Value struct {
						String *string     `json:"stringValue"`
						Int    *otelNumber `json:"intValue"`
					} `json:"value"`
				} `json:"attributes"`
			} `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

// add reads one OTLP export's spans.
func (o *otelSpans) add(raw json.RawMessage) error {
	var e otelExport
	if err := json.Unmarshal(raw, &e); err != nil {
		return typeError(err)
	}
	for i, rs := range e.ResourceSpans {
		for j, ss := range rs.ScopeSpans {
			for k, sp := range ss.Spans {
				p := fmt.Sprintf("resourceSpans[%d].scopeSpans[%d].spans[%d]", i, j, k)
				s := otelSpan{trace: sp.TraceID, id: sp.SpanID, parent: sp.ParentSpanID, line: p}
				var ok1, ok2 bool
				s.start, ok1 = sp.Start.int()
				s.end, ok2 = sp.End.int()
				if !ok1 || !ok2 || s.end < s.start {
					return &FieldError{p + ".endTimeUnixNano", "nanoseconds from 0, no earlier than startTimeUnixNano"}
				}
				if s.id == "" {
					return &FieldError{p + ".spanId", "a span id"}
				}
				for a, at := range sp.Attributes {
					ap := fmt.Sprintf("%s.attributes[%d].value", p, a)
					switch at.Key {
					case "gen_ai.operation.name":
						if at.Value.String == nil {
							return &FieldError{ap + ".stringValue", "the operation's name"}
						}
						s.op = *at.Value.String
					case "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens":
						v, ok := int64(0), false
						if at.Value.Int != nil {
							v, ok = at.Value.Int.int()
						}
						if !ok || v > MaxLength {
							return &FieldError{ap + ".intValue", fmt.Sprintf("tokens from 0 to %d", MaxLength)}
						}
						if at.Key == "gen_ai.usage.input_tokens" {
							s.in = int(v)
						} else {
							s.out = int(v)
						}
					}
				}
				o.spans = append(o.spans, s)
			}
		}
	}
	return nil
}

// model calls are spans of these operations.
func calls(op string) bool {
	return op == "chat" || op == "text_completion" || op == "generate_content"
}

// sessions makes the trace's sessions of the spans: each invoke_agent
// span's model calls (or a trace's, outside any agent) in time order,
// what lay between them, and the blocks each prompt shares with the last
// turn's prompt and answer.
func (o *otelSpans) sessions(t *AgentTrace) error {
	type key struct{ trace, id string }
	by := map[key]*otelSpan{}
	for i := range o.spans {
		by[key{o.spans[i].trace, o.spans[i].id}] = &o.spans[i]
	}
	// agentOf is the nearest invoke_agent span above s, nil for none.
	agentOf := func(s *otelSpan) *otelSpan {
		for p, n := by[key{s.trace, s.parent}], 0; p != nil && n < 1000; p, n = by[key{p.trace, p.parent}], n+1 {
			if p.op == "invoke_agent" {
				return p
			}
		}
		return nil
	}
	type agent struct {
		span         *otelSpan // nil: a trace's calls outside any agent
		calls, tools []*otelSpan
		subs         []*otelSpan
	}
	agents := map[key]*agent{}
	var order []key
	get := func(k key, span *otelSpan) *agent {
		a := agents[k]
		if a == nil {
			a = &agent{span: span}
			agents[k] = a
			order = append(order, k)
		}
		return a
	}
	for i := range o.spans {
		s := &o.spans[i]
		owner := agentOf(s)
		k := key{s.trace, ""}
		if owner != nil {
			k = key{owner.trace, owner.id}
		}
		switch {
		case s.op == "invoke_agent":
			get(key{s.trace, s.id}, s)
			if owner != nil {
				get(k, owner).subs = append(get(k, owner).subs, s)
			}
		case calls(s.op):
			if s.in < 1 {
				return fmt.Errorf("%s: a %s span needs gen_ai.usage.input_tokens of 1 or more", s.line, s.op)
			}
			get(k, owner).calls = append(get(k, owner).calls, s)
		case s.op == "execute_tool":
			get(k, owner).tools = append(get(k, owner).tools, s)
		}
	}
	index := map[key]int{} // a session's place among the sub-agents
	var subs []key
	for _, k := range order {
		a := agents[k]
		if a.span == nil || agentOf(a.span) == nil {
			continue
		}
		if up := agentOf(a.span); agentOf(up) != nil {
			t.Dropped++ // a sub-agent's own sub-agent
			continue
		}
		index[k] = len(subs)
		subs = append(subs, k)
	}
	turns := func(a *agent, scope int64) []TraceTurn {
		byStart := func(x, y *otelSpan) int { return cmp.Compare(x.start, y.start) }
		slices.SortStableFunc(a.calls, byStart)
		var out []TraceTurn
		var last []int64
		var made int64
		prev := 0
		for n, c := range a.calls {
			turn := TraceTurn{Input: c.in, Output: max(c.out, 1)}
			turn.Hashes = grow(last, prev, c.in, scope, &made)
			last = turn.Hashes
			prev = c.in + c.out
			if n+1 < len(a.calls) {
				from, to := c.end, a.calls[n+1].start
				for _, s := range a.subs {
					if j, ok := index[key{s.trace, s.id}]; ok && s.start >= from && s.start < to {
						turn.Agents = append(turn.Agents, j)
					}
				}
				gap := time.Duration(max(to-from, 0))
				switch {
				case len(turn.Agents) > 0:
				case slices.ContainsFunc(a.tools, func(s *otelSpan) bool { return s.start >= from && s.start < to }):
					turn.Tool = gap
				default:
					turn.Think = gap
				}
			}
			out = append(out, turn)
		}
		return out
	}
	t.BlockSize = DefaultBlockSize
	for _, k := range order {
		a := agents[k]
		if _, sub := index[k]; sub || len(a.calls) == 0 || (a.span != nil && agentOf(a.span) != nil) {
			continue
		}
		t.Sessions = append(t.Sessions, TraceSession{ID: k.trace + "/" + k.id, Turns: turns(a, int64(len(t.Sessions)+1)<<40)})
		t.Top++
	}
	for n, k := range subs {
		t.subs = append(t.subs, TraceSession{ID: k.trace + "/" + k.id, Turns: turns(agents[k], int64(n+1)<<40|1<<39)})
	}
	return nil
}

// grow is the blocks of a prompt of in tokens whose first shared tokens
// are the last prompt and answer (last's blocks, as far as whole blocks
// of them go), then new blocks, numbered on from *made within scope.
func grow(last []int64, shared, in int, scope int64, made *int64) []int64 {
	keep := min(min(shared, in)/DefaultBlockSize, len(last))
	hashes := append([]int64(nil), last[:keep]...)
	for len(hashes) < blocks(in, DefaultBlockSize) {
		hashes = append(hashes, scope|*made)
		*made++
	}
	return hashes
}
