package workload

import (
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// traceSession is the trace session run session s replays: the top-level
// sessions in turn (wrapping round), or for a sub-agent the one its
// parent's turn forked; nil for an id the trace has no session for.
func (w *Workload) traceSession(s int) *TraceSession {
	t := w.o.AgentTrace
	p, sub := Parent(s)
	if !sub {
		return &t.Sessions[s%t.Top]
	}
	parent := &t.Sessions[p%t.Top]
	k, j := s>>10&1023, s&1023
	if k >= len(parent.Turns) || j >= len(parent.Turns[k].Agents) {
		return nil
	}
	return &t.Sessions[parent.Turns[k].Agents[j]]
}

// traceTurns is session s's turns in the trace.
func (w *Workload) traceTurns(s int) int {
	if ts := w.traceSession(s); ts != nil {
		return len(ts.Turns)
	}
	return 0
}

// traceAfter is what session s waited for after its turn k in the trace.
func (w *Workload) traceAfter(s, k int) (tool, think time.Duration, agents []int) {
	ts := w.traceSession(s)
	if ts == nil || k >= len(ts.Turns)-1 {
		return 0, 0, nil
	}
	turn := ts.Turns[k]
	for j := range turn.Agents {
		agents = append(agents, agentID(s, k, j))
	}
	return turn.Tool, turn.Think, agents
}

// traceTurn is turn k of session s: its prompt built of its blocks (the
// same hash id the same text, so turns and sessions that share blocks
// share their text exactly) and its output length.
func (w *Workload) traceTurn(s, k int) record.Request {
	req := record.Request{IgnoreEOS: w.o.IgnoreEOS, Temperature: w.o.Temperature, PromptSource: w.source()}
	ts := w.traceSession(s)
	if ts == nil || k >= len(ts.Turns) {
		return req
	}
	turn := ts.Turns[k]
	return w.blocked(turnIndex(s, k), TraceRequest{Input: turn.Input, Output: turn.Output, Hashes: turn.Hashes}, req)
}
