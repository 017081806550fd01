package runner

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// talks are conversations of c%3+1 turns whose requests say which turn and
// which answers they were built from.
type talks struct {
	mu    sync.Mutex
	built []string
}

func (t *talks) Turns(c int) int { return c%3 + 1 }

func (t *talks) Turn(c, k int, answers []string) record.Request {
	s := fmt.Sprintf("c%d t%d %v", c, k, answers)
	t.mu.Lock()
	t.built = append(t.built, s)
	t.mu.Unlock()
	return record.Request{Prompt: s}
}

// echo answers each request with its prompt as the text.
type echo struct{ d time.Duration }

func (e echo) Do(_ context.Context, clock record.Clock, req record.Request, rec *record.Record) {
	rec.Sent = clock.Now()
	time.Sleep(e.d)
	rec.FirstByte, rec.Status, rec.Text, rec.Done = clock.Now(), record.StatusOK, "<"+req.Prompt+">", clock.Now()
}

// A conversation's turns go one after another on one slot, the think time
// apart (and scheduled after it, so the client queue stays empty), each
// built from the answers before it; -c counts conversations in flight.
func TestConversationsTurnByTurn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		src := &talks{}
		r := &Runner{Backend: echo{10 * time.Millisecond}, Conversations: src, Clock: record.NewClock()}
		start := time.Now()
		recs := r.Stage(context.Background(), Plan{Concurrency: 2, Requests: 4, Think: time.Second})
		// Conversations 0..3 have 1, 2, 3 and 1 turns.
		if len(recs) != 7 {
			t.Fatalf("%d requests, want 7", len(recs))
		}
		byConv := map[int][]record.Record{}
		for _, rec := range recs {
			byConv[rec.Conversation] = append(byConv[rec.Conversation], rec)
			if q := rec.ClientQueue(); q > 0 {
				t.Errorf("conversation %d turn %d waited %v in the client: the think time counted as queue", rec.Conversation, rec.Turn, q)
			}
		}
		two := byConv[2]
		if len(two) != 3 || two[0].Turn != 1 || two[2].Turn != 3 {
			t.Fatalf("conversation 2: %+v", two)
		}
		if gap := two[1].Sent - two[0].Done; gap < time.Second || gap > time.Second+time.Millisecond {
			t.Errorf("turns 1 and 2 %v apart, want the think time (1 s)", gap)
		}
		want := "c2 t2 [<c2 t0 []> <c2 t1 [<c2 t0 []>]>]"
		if !slices.Contains(src.built, want) {
			t.Errorf("turn 3 of conversation 2 not built from the answers before it: %q", src.built)
		}
		// Two slots: conversation 2 (3 turns, 2 s of thinking) sets the pace.
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("took %v: conversations did not run two at a time", took)
		}
	})
}

// Explicit arrivals (a trace's timestamps): the i-th arrival sends the
// source's i-th request, even when many arrive at once and their sends
// race (in real time: goroutines started together run in any order), and
// each is scheduled at its own offset.
func TestArrivalsInOrder(t *testing.T) {
	t.Parallel()
	func() {
		var at []time.Duration
		for i := range 200 {
			at = append(at, time.Duration(i/50)*time.Millisecond) // bursts of 50 at once
		}
		r := &Runner{Backend: echo{time.Millisecond}, Source: func(i int) record.Request { return record.Request{Prompt: fmt.Sprint(i)} }, Clock: record.NewClock()}
		recs := r.Stage(context.Background(), Plan{Rate: 1, At: at})
		if len(recs) != 200 {
			t.Fatalf("%d requests", len(recs))
		}
		start := recs[0].Scheduled - at[recs[0].ID] // the stage's start
		for _, rec := range recs {
			if rec.Text != "<"+fmt.Sprint(rec.ID)+">" || rec.Scheduled-start != at[rec.ID] {
				t.Fatalf("request %d sent %s, scheduled %v; want its own prompt at %v", rec.ID, rec.Text, rec.Scheduled-start, at[rec.ID])
			}
		}
	}()
}
