package workload

import (
	"cmp"
	"fmt"
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

// AgentTraceStats is what an agent trace holds: its sessions, their
// turns, sub-agents and waits, and what a prefix cache could serve of
// their prompts (Prefix, as for a Mooncake trace: every session once,
// each sub-agent after the turn that forks it, turns in order).
type AgentTraceStats struct {
	Format    string
	Sessions  int // top-level
	SubAgents int
	Dropped   int // sub-agents of sub-agents, not replayed
	Turns     int // every session's, sub-agents' too
	// ToolS and ThinkS are the waits the trace holds after turns, in
	// seconds over all sessions.
	ToolS, ThinkS float64
	Prefix        TraceStats
}

// Stats computes the trace's statistics at block tokens a block (the
// trace's own size when it gives one).
func (t *AgentTrace) Stats(block int) AgentTraceStats {
	s := AgentTraceStats{Format: t.Format, Sessions: t.Top, SubAgents: len(t.Sessions) - t.Top, Dropped: t.Dropped}
	block = cmp.Or(t.BlockSize, block)
	var reqs []TraceRequest
	var walk func(ts *TraceSession)
	walk = func(ts *TraceSession) {
		for _, turn := range ts.Turns {
			s.Turns++
			s.ToolS += turn.Tool.Seconds()
			s.ThinkS += turn.Think.Seconds()
			reqs = append(reqs, TraceRequest{Input: turn.Input, Output: turn.Output, Hashes: turn.Hashes})
			for _, a := range turn.Agents {
				walk(&t.Sessions[a])
			}
		}
	}
	for i := range t.Sessions[:t.Top] {
		walk(&t.Sessions[i])
	}
	s.Prefix = (&Trace{Name: t.Name, Requests: reqs}).Stats(block)
	return s
}

// Check says whether every turn's blocks fit its prompt at block tokens a
// block (the trace's own size when it gives one), as Trace.Check does.
func (t *AgentTrace) Check(block int) error {
	block = cmp.Or(t.BlockSize, block)
	for i, ts := range t.Sessions {
		for k, turn := range ts.Turns {
			if n := blocks(turn.Input, block); len(turn.Hashes) > n {
				return fmt.Errorf("%s: session %q turn %d: %d hash ids for %d input tokens, more than its %d blocks of %d tokens (give the trace's --block-size)",
					t.Name, t.Sessions[i].ID, k+1, len(turn.Hashes), turn.Input, n, block)
			}
		}
	}
	return nil
}
