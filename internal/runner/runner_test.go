package runner

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// fake answers every request after d with what answer makes of it.
type fake struct {
	d      time.Duration
	answer func(i int64, rec *record.Record)
	sent   atomic.Int64
}

func (f *fake) Do(ctx context.Context, clock record.Clock, _ record.Request, rec *record.Record) {
	rec.Sent = clock.Now()
	i := f.sent.Add(1)
	select {
	case <-time.After(f.d):
	case <-ctx.Done():
		rec.Status, rec.Done = record.StatusCancelled, clock.Now()
		return
	}
	f.answer(i, rec)
	rec.Done = clock.Now()
}

func refused(_ int64, rec *record.Record) {
	rec.Status, rec.Error = record.StatusStreamError, "dial tcp 127.0.0.1:1: connect: connection refused"
}

// A dead server is not hammered: after DefaultGiveUp requests in a row
// with no response the stage stops, says why, and each slot backed off
// between its attempts.
func TestDeadServerStopsTheStage(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := &fake{d: time.Millisecond, answer: refused}
		r := &Runner{Backend: b, Source: func(int) record.Request { return record.Request{} }, Clock: record.NewClock()}
		start := time.Now()
		n := 0
		err := r.Each(context.Background(), Plan{Concurrency: 4, Requests: 1_000_000}, func(*record.Record) { n++ })
		if !errors.Is(err, ErrServerGone) || n > DefaultGiveUp+4 || n < DefaultGiveUp {
			t.Errorf("%d requests, error %v: want the stage stopped after %d", n, err, DefaultGiveUp)
		}
		// Four slots sharing 20 failures back off 10, 20, 40, 80 ms … each.
		if took := time.Since(start); took < 100*time.Millisecond {
			t.Errorf("20 refused requests in %v: the slots did not back off", took)
		}
	})
}

// A server that answers again resets the count: failures spread among
// answers never stop a stage.
func TestIntermittentFailuresDoNotStop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := &fake{d: time.Millisecond, answer: func(i int64, rec *record.Record) {
			if i%10 == 0 {
				rec.FirstByte, rec.Status = 0, record.StatusOK
				return
			}
			refused(i, rec)
		}}
		r := &Runner{Backend: b, Source: func(int) record.Request { return record.Request{} }, Clock: record.NewClock()}
		recs := r.Stage(context.Background(), Plan{Concurrency: 2, Requests: 200})
		if len(recs) != 200 {
			t.Errorf("%d of 200 requests", len(recs))
		}
	})
}

// HTTP 429 slows a closed loop down: over 5 s a rate-limiting server sees
// tens of requests, not thousands; and a waited slot's next request is
// scheduled after the wait, so the wait is not counted as client queue.
func TestRateLimitedServerIsNotHammered(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := &fake{d: 100 * time.Microsecond, answer: func(_ int64, rec *record.Record) {
			rec.FirstByte, rec.Status, rec.HTTPCode = 0, record.StatusHTTPError, 429
		}}
		r := &Runner{Backend: b, Source: func(int) record.Request { return record.Request{} }, Clock: record.NewClock()}
		var worstQueue time.Duration
		err := r.Each(context.Background(), Plan{Concurrency: 4, Duration: 5 * time.Second}, func(rec *record.Record) {
			worstQueue = max(worstQueue, rec.ClientQueue())
		})
		if sent := b.sent.Load(); err != nil || sent > 4*12 {
			t.Errorf("%d requests in 5 s to a server answering 429 (err %v)", sent, err)
		}
		if worstQueue > time.Millisecond {
			t.Errorf("client queue %v: the backoff was counted as the client's queue", worstQueue)
		}
	})
}

// A stage with both a request count and a duration ends at whichever comes
// first: the count on a fast server, the time on a slow one.
func TestRequestsOrDurationWhicheverFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d time.Duration // each request's time
	}{
		{10 * time.Millisecond},  // 20 requests take 0.1 s: the count ends it
		{300 * time.Millisecond}, // starts at 0, 0.3, 0.6, 0.9 s on each slot: the time ends it at 8
	} {
		synctest.Test(t, func(t *testing.T) {
			answered := func(_ int64, rec *record.Record) { rec.FirstByte = rec.Sent }
			b := &fake{d: tc.d, answer: answered}
			r := &Runner{Backend: b, Source: func(int) record.Request { return record.Request{} }, Clock: record.NewClock()}
			n := 0
			if err := r.Each(context.Background(), Plan{Concurrency: 2, Requests: 20, Duration: time.Second}, func(*record.Record) { n++ }); err != nil {
				t.Fatal(err)
			}
			// Two slots start requests at 0, d, 2d … while under 1 s.
			want := min(20, 2*int((time.Second+tc.d-1)/tc.d))
			if n != want {
				t.Errorf("requests of %v: %d ran, want %d", tc.d, n, want)
			}
		})
	}
}

// A Retry-After longer than the stage never holds it past its end: the
// slot's wait is cut at the stage's duration.
func TestRetryAfterStopsAtTheStageEnd(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := &fake{d: time.Millisecond, answer: func(_ int64, rec *record.Record) {
			rec.FirstByte, rec.Status, rec.HTTPCode, rec.RetryAfter = 0, record.StatusHTTPError, 503, time.Minute
		}}
		r := &Runner{Backend: b, Source: func(int) record.Request { return record.Request{} }, Clock: record.NewClock()}
		start := time.Now()
		recs := r.Stage(context.Background(), Plan{Concurrency: 3, Duration: 10 * time.Second})
		if took := time.Since(start); len(recs) != 3 || took > 10*time.Second+10*time.Millisecond {
			t.Errorf("%d requests, stage took %v: want 3 requests and the stage over at 10 s", len(recs), took)
		}
	})
}

// A stage of few streams holds little: the queue of records for the sink
// is as long as the concurrency needs, not 4096 records (1.7 MB) always.
//
// Serial: it reads the process's allocations.
func TestSmallStageAllocatesLittle(t *testing.T) {
	b := &fake{answer: func(int64, *record.Record) {}}
	r := &Runner{Backend: b, Source: func(int) record.Request { return record.Request{} }, Clock: record.NewClock(), Sink: func(record.Record) {}}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	r.Each(context.Background(), Plan{Concurrency: 2, Requests: 4}, nil)
	runtime.ReadMemStats(&m1)
	if got := m1.TotalAlloc - m0.TotalAlloc; got > 256<<10 {
		t.Errorf("a stage of 4 requests on 2 streams allocated %d KB, want under 256 KB", got>>10)
	}
}
