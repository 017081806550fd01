package summary

import (
	"cmp"
	"slices"
	"time"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
)

// Sessions are a stage's agent-session figures (METRICS.md §3, Agent
// sessions): a session is a top-level session's turns and its
// sub-agents'; its latency runs from its first turn's schedule to the end
// of its last turn, tool and sub-agent time included. Means are per
// session whose every turn ended ok; a session with a failed turn is
// counted in Failed and nowhere else.
type Sessions struct {
	Sessions  int        `json:"sessions"`
	Failed    int        `json:"failed,omitempty"`
	Latency   stats.Dist `json:"latency_ms"`
	Turns     float64    `json:"mean_turns"` // its own and its sub-agents'
	SubAgents float64    `json:"mean_sub_agents"`
	// Tokens of a session, all its turns': prompt (as the server counted
	// it), output, and prompt tokens the server served from its cache.
	InputTokens  float64 `json:"mean_input_tokens"`
	OutputTokens float64 `json:"mean_output_tokens"`
	CachedTokens float64 `json:"mean_cached_tokens"`
	// Where a session's time went, over its own turns (its sub-agents'
	// run inside AgentS): in the model (each turn from its schedule to its
	// end), in tools, waiting on sub-agents; the rest is the user's think
	// time and backoff.
	ModelS float64 `json:"mean_model_s"`
	ToolS  float64 `json:"mean_tool_s"`
	AgentS float64 `json:"mean_sub_agent_s"`
	// TTFT and TPOT of sessions' first turns (a sub-agent's first turn
	// too) and of their later turns, whose prompts hold a history.
	FirstTTFT stats.Dist `json:"first_turn_ttft_ms"`
	LaterTTFT stats.Dist `json:"later_turn_ttft_ms"`
	FirstTPOT stats.Dist `json:"first_turn_tpot_ms"`
	LaterTPOT stats.Dist `json:"later_turn_tpot_ms"`
}

// sessionAcc gathers one top-level session's requests.
type sessionAcc struct {
	start, end          time.Duration
	turns               int
	subs                map[int]bool
	in, out, cached     int
	model, tool, agents time.Duration
	failed              bool
	ttft, tpot          []float64 // every ok turn's, ms, its sub-agents' too
}

// sessionsAcc gathers a stage's sessions, keyed by the top-level
// session's Conversation, and the per-turn samples.
type sessionsAcc struct {
	by                   map[int]*sessionAcc
	order                []int
	firstTTFT, laterTTFT []float64
	firstTPOT, laterTPOT []float64
}

// TrackSessions makes the stage's figures include agent sessions'
// (Stage.Sessions). Call it before the first Add.
func (a *Acc) TrackSessions() { a.sessions = &sessionsAcc{by: map[int]*sessionAcc{}} }

// Root is the top-level session a conversation's request belongs to.
func Root(r *record.Record) int {
	if r.Root > 0 {
		return r.Root - 1
	}
	return r.Conversation
}

// session adds r to its session, when sessions are tracked.
func (a *Acc) session(r *record.Record) {
	ss := a.sessions
	if ss == nil || r.Turn <= 0 {
		return
	}
	id := Root(r)
	s := ss.by[id]
	if s == nil {
		s = &sessionAcc{start: r.Scheduled, end: r.Done, subs: map[int]bool{}}
		ss.by[id] = s
		ss.order = append(ss.order, id)
	}
	s.start, s.end = min(s.start, r.Scheduled), max(s.end, r.Done)
	s.turns++
	if !r.OK() {
		s.failed = true
		return
	}
	prompt, _ := r.Prompt()
	s.in, s.out, s.cached = s.in+prompt, s.out+r.OutputTokens, s.cached+r.CachedTokens
	if r.Root > 0 {
		s.subs[r.Conversation] = true
	} else {
		s.model += r.Done - r.Scheduled
		s.tool += r.ToolWait
		s.agents += r.AgentWait
	}
	if ttft, ok := r.TTFT(); ok {
		s.ttft = append(s.ttft, record.Ms(ttft))
		if r.Turn == 1 {
			ss.firstTTFT = append(ss.firstTTFT, record.Ms(ttft))
		} else {
			ss.laterTTFT = append(ss.laterTTFT, record.Ms(ttft))
		}
	}
	if tpot, ok := r.TPOT(); ok {
		s.tpot = append(s.tpot, tpot)
		if r.Turn == 1 {
			ss.firstTPOT = append(ss.firstTPOT, tpot)
		} else {
			ss.laterTPOT = append(ss.laterTPOT, tpot)
		}
	}
}

// figures are the tracked sessions' figures, nil when not tracked.
func (ss *sessionsAcc) figures() *Sessions {
	if ss == nil {
		return nil
	}
	out := &Sessions{FirstTTFT: stats.Describe(ss.firstTTFT), LaterTTFT: stats.Describe(ss.laterTTFT),
		FirstTPOT: stats.Describe(ss.firstTPOT), LaterTPOT: stats.Describe(ss.laterTPOT)}
	var lat []float64
	for _, id := range ss.order {
		s := ss.by[id]
		if s.failed {
			out.Failed++
			continue
		}
		out.Sessions++
		lat = append(lat, record.Ms(s.end-s.start))
		out.Turns += float64(s.turns)
		out.SubAgents += float64(len(s.subs))
		out.InputTokens += float64(s.in)
		out.OutputTokens += float64(s.out)
		out.CachedTokens += float64(s.cached)
		out.ModelS += s.model.Seconds()
		out.ToolS += s.tool.Seconds()
		out.AgentS += s.agents.Seconds()
	}
	out.Latency = stats.Describe(lat)
	if n := float64(out.Sessions); n > 0 {
		for _, v := range []*float64{&out.Turns, &out.SubAgents, &out.InputTokens, &out.OutputTokens, &out.CachedTokens, &out.ModelS, &out.ToolS, &out.AgentS} {
			*v /= n
		}
	}
	return out
}

// SessionSample is one agent session's per-turn figures, for a capacity
// search that takes sessions, not turns, as its draws.
type SessionSample struct {
	Start  time.Duration // its first turn's schedule
	Failed bool          // a turn failed
	// TTFT and TPOT are its ok turns' (its sub-agents' too), in ms.
	TTFT, TPOT []float64
}

// SessionSamples are the tracked sessions' samples in the order they
// started; nil when sessions are not tracked.
func (a *Acc) SessionSamples() []SessionSample {
	ss := a.sessions
	if ss == nil {
		return nil
	}
	out := make([]SessionSample, 0, len(ss.order))
	for _, id := range ss.order {
		s := ss.by[id]
		out = append(out, SessionSample{Start: s.start, Failed: s.failed, TTFT: s.ttft, TPOT: s.tpot})
	}
	slices.SortStableFunc(out, func(a, b SessionSample) int { return cmp.Compare(a.Start, b.Start) })
	return out
}
