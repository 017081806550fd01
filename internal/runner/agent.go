package runner

import (
	"cmp"
	"context"
	"sync"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// Sessions are agent sessions: conversations whose turns may end in a
// tool call, answered after the tool's time, or in a fork of sub-agent
// sessions that run at once, each with its own context, and are waited
// for. A Conversations that is also Sessions is run as agent sessions.
type Sessions interface {
	Conversations
	// After is what session s waits for after its turn k (from 0) and
	// before the next: sub-agent sessions (their ids, whose turns Turns
	// and Turn give), else a tool's time, else the user's think time
	// (Plan.Think where it is 0).
	After(s, k int) (tool, think time.Duration, agents []int)
}

// agents keeps c agent sessions in flight until n have started or d has
// passed (as talk does conversations). A session's sub-agents run beside
// it, outside the c slots: c counts the top-level sessions.
func (r *Runner) agents(ctx context.Context, st Plan, a Sessions, c, n int, d time.Duration, warmup bool, emit func(record.Record)) {
	claim := r.claims(ctx, r.Clock.Now(), n, d)
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for claim() {
				s := r.takeConv()
				r.session(ctx, st, a, s, 0, warmup, emit)
			}
		})
	}
	wg.Wait()
}

// session sends session s's turns one after the other, waiting after each
// what After says, and returns when its last turn ended (or one failed:
// its history would be wrong from there). root is 1 + the top-level
// session of a sub-agent, 0 for a top-level one.
func (r *Runner) session(ctx context.Context, st Plan, a Sessions, s, root int, warmup bool, emit func(record.Record)) {
	scheduled := r.Clock.Now()
	var answers []string
	var tool, waited time.Duration
	turns := a.Turns(s)
	for k := range turns {
		source := func(int) record.Request { return a.Turn(s, k, answers) }
		rec := r.send(ctx, st, r.take(), scheduled, 0, warmup, emit, source, func(rec *record.Record) {
			rec.Conversation, rec.Turn, rec.Root, rec.ToolWait, rec.AgentWait = s, k+1, root, tool, waited
		})
		if !rec.OK() || k == turns-1 {
			return
		}
		answers = append(answers, rec.Text)
		var agents []int
		var think time.Duration
		tool, think, agents = a.After(s, k)
		waited = 0
		switch {
		case len(agents) > 0:
			start := r.Clock.Now()
			sub := root
			if sub == 0 {
				sub = s + 1
			}
			var wg sync.WaitGroup
			for _, id := range agents {
				wg.Go(func() { r.session(ctx, st, a, id, sub, warmup, emit) })
			}
			wg.Wait()
			waited = r.Clock.Now() - start
		case tool > 0:
			if !r.think(ctx, tool) {
				return
			}
		default:
			if !r.think(ctx, cmp.Or(think, st.Think)) {
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		scheduled = r.Clock.Now()
	}
}
