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

// spanKey names a span: its trace and its id.
type spanKey struct{ trace, id string }

// otelAgent is a session of spans: an invoke_agent span (nil: a trace's
// calls outside any agent), its model calls, tool spans and sub-agents.
type otelAgent struct {
	span         *otelSpan
	calls, tools []*otelSpan
	subs         []*otelSpan
}

// otelTree is the spans grouped by the agent each belongs to.
type otelTree struct {
	by     map[spanKey]*otelSpan
	agents map[spanKey]*otelAgent
	order  []spanKey
	index  map[spanKey]int // a sub-agent's place among the sub-agents
}

// agentOf is the nearest invoke_agent span above s, nil for none.
func (tr *otelTree) agentOf(s *otelSpan) *otelSpan {
	for p, n := tr.by[spanKey{s.trace, s.parent}], 0; p != nil && n < 1000; p, n = tr.by[spanKey{p.trace, p.parent}], n+1 {
		if p.op == "invoke_agent" {
			return p
		}
	}
	return nil
}

func (tr *otelTree) get(k spanKey, span *otelSpan) *otelAgent {
	a := tr.agents[k]
	if a == nil {
		a = &otelAgent{span: span}
		tr.agents[k] = a
		tr.order = append(tr.order, k)
	}
	return a
}

// group puts each span with the agent it belongs to.
func (tr *otelTree) group(spans []otelSpan) error {
	for i := range spans {
		s := &spans[i]
		owner := tr.agentOf(s)
		k := spanKey{s.trace, ""}
		if owner != nil {
			k = spanKey{owner.trace, owner.id}
		}
		switch {
		case s.op == "invoke_agent":
			tr.get(spanKey{s.trace, s.id}, s)
			if owner != nil {
				a := tr.get(k, owner)
				a.subs = append(a.subs, s)
			}
		case calls(s.op):
			if s.in < 1 {
				return fmt.Errorf("%s: a %s span needs gen_ai.usage.input_tokens of 1 or more", s.line, s.op)
			}
			a := tr.get(k, owner)
			a.calls = append(a.calls, s)
		case s.op == "execute_tool":
			a := tr.get(k, owner)
			a.tools = append(a.tools, s)
		}
	}
	return nil
}

// turns are an agent's model calls in time order, each with what lay
// between it and the next: sub-agents started then, else a tool's span
// (the gap is the tool's), else the user's gap.
func (tr *otelTree) turns(a *otelAgent, scope int64) []TraceTurn {
	slices.SortStableFunc(a.calls, func(x, y *otelSpan) int { return cmp.Compare(x.start, y.start) })
	var out []TraceTurn
	var last []int64
	var made int64
	prev := 0
	for n, c := range a.calls {
		turn := TraceTurn{Input: c.in, Output: max(c.out, 1)}
		turn.Hashes = grow(last, prev, c.in, scope, &made)
		last, prev = turn.Hashes, c.in+c.out
		if n+1 < len(a.calls) {
			from, to := c.end, a.calls[n+1].start
			in := func(s *otelSpan) bool { return s.start >= from && s.start < to }
			for _, s := range a.subs {
				if j, ok := tr.index[spanKey{s.trace, s.id}]; ok && in(s) {
					turn.Agents = append(turn.Agents, j)
				}
			}
			gap := time.Duration(max(to-from, 0))
			switch {
			case len(turn.Agents) > 0:
			case slices.ContainsFunc(a.tools, in):
				turn.Tool = gap
			default:
				turn.Think = gap
			}
		}
		out = append(out, turn)
	}
	return out
}

// sessions makes the trace's sessions of the spans: each invoke_agent
// span's model calls (or a trace's, outside any agent) in time order,
// what lay between them, and the blocks each prompt shares with the last
// turn's prompt and answer. A sub-agent's own sub-agents are dropped.
func (o *otelSpans) sessions(t *AgentTrace) error {
	tr := &otelTree{by: map[spanKey]*otelSpan{}, agents: map[spanKey]*otelAgent{}, index: map[spanKey]int{}}
	for i := range o.spans {
		tr.by[spanKey{o.spans[i].trace, o.spans[i].id}] = &o.spans[i]
	}
	if err := tr.group(o.spans); err != nil {
		return err
	}
	var subs []spanKey
	for _, k := range tr.order {
		a := tr.agents[k]
		if a.span == nil || tr.agentOf(a.span) == nil {
			continue
		}
		if tr.agentOf(tr.agentOf(a.span)) != nil {
			t.Dropped++
			continue
		}
		tr.index[k] = len(subs)
		subs = append(subs, k)
	}
	t.BlockSize = DefaultBlockSize
	for _, k := range tr.order {
		a := tr.agents[k]
		if len(a.calls) == 0 || (a.span != nil && tr.agentOf(a.span) != nil) {
			continue
		}
		t.Sessions = append(t.Sessions, TraceSession{ID: k.trace + "/" + k.id, Turns: tr.turns(a, int64(len(t.Sessions)+1)<<40)})
		t.Top++
	}
	for n, k := range subs {
		t.subs = append(t.subs, TraceSession{ID: k.trace + "/" + k.id, Turns: tr.turns(tr.agents[k], int64(n+1)<<40|1<<39)})
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
