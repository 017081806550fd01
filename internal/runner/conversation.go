package runner

import (
	"context"
	"sync"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// Conversations are multi-turn requests: conversation c has Turns(c)
// turns, and turn k (from 0) is built from the answers of the turns before
// it (the outputs' text, empty unless the backend keeps text), so that its
// history can be the server's own.
type Conversations interface {
	Turns(c int) int
	Turn(c, k int, answers []string) record.Request
}

func (r *Runner) takeConv() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conv++
	return r.index(r.conv - 1)
}

// talk keeps c conversations in flight until n have started or d has
// passed, whichever comes first (a zero n or d is no limit). A slot sends a conversation's turns one after
// the other, each Plan.Think after the last ended (and scheduled then: the
// think time is the user's, not the client's queue); a turn that fails
// ends its conversation, whose history would be wrong from there.
func (r *Runner) talk(ctx context.Context, st Plan, c, n int, d time.Duration, warmup bool, emit func(record.Record)) {
	start := r.Clock.Now()
	claim := r.claims(ctx, start, n, d)
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			scheduled := start
			var waited time.Duration // the slot's backoff before its next request
			k := 0                   // throttled requests in a row on this slot
			for claim() {
				conv := r.takeConv()
				var answers []string
				for turn := range r.Conversations.Turns(conv) {
					if turn > 0 && !r.think(ctx, st.Think) {
						return
					}
					if turn > 0 {
						scheduled = r.Clock.Now()
					}
					source := func(int) record.Request { return r.Conversations.Turn(conv, turn, answers) }
					rec := r.send(ctx, st, r.take(), scheduled, waited, warmup, emit, source, func(rec *record.Record) { rec.Conversation, rec.Turn = conv, turn+1 })
					scheduled, waited = rec.Done, 0
					if throttled(&rec) {
						k++
						waited = backoff(k, &rec)
						if !r.think(ctx, waited) {
							return
						}
						scheduled = r.Clock.Now()
						break
					}
					k = 0
					if !rec.OK() {
						break
					}
					answers = append(answers, rec.Text)
				}
			}
		})
	}
	wg.Wait()
}

// think waits d; false when ctx ended first.
func (r *Runner) think(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
