package runner

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

func ok(_ int64, rec *record.Record) { rec.Status = record.StatusOK }

// Shard 1 of 3 takes the ids 1, 4, 7 …: its source is asked for them, and
// its records carry them, warm-up included. The gate opens after the
// warm-up and before the first measured request; its error ends the
// stage there.
func TestShardIDsAndGate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var asked, ids []int
		var gated time.Duration
		var warmDone time.Duration
		r := &Runner{Backend: &fake{d: 10 * time.Millisecond, answer: ok}, Clock: record.NewClock(), Shard: 1, Shards: 3,
			Source: func(i int) record.Request { mu.Lock(); asked = append(asked, i); mu.Unlock(); return record.Request{} },
			Sink: func(rec record.Record) {
				ids = append(ids, rec.ID)
				if rec.Warmup {
					warmDone = max(warmDone, rec.Done)
				}
			}}
		r.Gate = func(ctx context.Context, st Plan) error {
			gated = r.Clock.Now()
			time.Sleep(time.Second) // the other shards
			return nil
		}
		recs := r.Stage(context.Background(), Plan{Concurrency: 2, Requests: 4, Warmup: 2})
		slices.Sort(asked)
		slices.Sort(ids)
		if want := []int{1, 4, 7, 10, 13, 16}; !slices.Equal(asked, want) || !slices.Equal(ids, want) {
			t.Errorf("asked %v, records %v: want %v", asked, ids, want)
		}
		if gated < warmDone || len(recs) != 4 {
			t.Fatalf("gate at %v, warm-up done at %v, %d measured", gated, warmDone, len(recs))
		}
		for _, rec := range recs {
			if rec.Sent < gated+time.Second {
				t.Errorf("request %d sent at %v, before the gate opened at %v", rec.ID, rec.Sent, gated+time.Second)
			}
		}
		// A gate that fails: no measured request, its error returned.
		bad := errors.New("barrier: shards 2 of 3 are not there")
		r.Gate = func(context.Context, Plan) error { return bad }
		n := 0
		if err := r.Each(context.Background(), Plan{Concurrency: 2, Requests: 4, Warmup: 2}, func(*record.Record) { n++ }); !errors.Is(err, bad) || n != 0 {
			t.Errorf("error %v, %d measured: want the gate's error and none", err, n)
		}
	})
}
