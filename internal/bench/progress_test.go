package bench

import (
	"bytes"
	"context"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
)

// syncBuffer is a bytes.Buffer safe for the display's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func finished(tokens int, status record.Status) *record.Record {
	r := record.New(0)
	r.OutputTokens, r.Status = tokens, status
	return &r
}

// Plain lines, in virtual time: one every LiveEvery with the requests done
// of the total, tok/s of the last seconds, errors, elapsed and the ETA
// from the pace so far.
func TestProgressLines(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var out syncBuffer
		env := &Env{Progress: &out, Live: ProgressLines, LiveEvery: 2 * time.Second}
		l := env.live("C=4", runner.Plan{Concurrency: 4, Requests: 10})
		// One request of 100 tokens finishes every 0.5 s from 0.45 s (between
		// the display's ticks); the third fails.
		time.Sleep(450 * time.Millisecond)
		for i := range 8 {
			if i > 0 {
				time.Sleep(500 * time.Millisecond)
			}
			st := record.StatusOK
			if i == 2 {
				st = record.StatusHTTPError
			}
			l.add(finished(100, st))
		}
		time.Sleep(100 * time.Millisecond) // past the 4 s tick
		synctest.Wait()
		l.end()
		got := out.String()
		// At 2 s: 4 done (400 tokens in 2 s), ETA 2 s × 6/4 = 3 s; at 4 s:
		// 8 done, tok/s over the last 3 s window (2 s → 4 s: 400 tokens / 2 s).
		want := "C=4: 4/10 requests, 200.0 tok/s, 1 errors, 2.0 s, ETA 3.0 s\n" +
			"C=4: 8/10 requests, 200.0 tok/s, 1 errors, 4.0 s, ETA 1.0 s\n"
		if got != want {
			t.Errorf("got\n%s\nwant\n%s", got, want)
		}
	})
}

// A timed stage counts requests and says how much of its time is left.
func TestProgressTimed(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var out syncBuffer
		env := &Env{Progress: &out, Live: ProgressLines, LiveEvery: 5 * time.Second}
		l := env.live("rate=2/s", runner.Plan{Rate: 2, Duration: 30 * time.Second})
		time.Sleep(450 * time.Millisecond) // between the display's ticks
		for i := range 10 {
			if i > 0 {
				time.Sleep(500 * time.Millisecond)
			}
			l.add(finished(50, record.StatusOK))
		}
		time.Sleep(100 * time.Millisecond) // past the 5 s tick
		l.end()
		if want := "rate=2/s: 10 requests, 100.0 tok/s, 0 errors, 5.0 s of 30.0 s, ETA 25.0 s\n"; out.String() != want {
			t.Errorf("got %q, want %q", out.String(), want)
		}
	})
}

// A stage of agent sessions counts requests (turns) without a total to
// count down to: its Requests are sessions, each of many requests, so
// "13/3 requests" and an ETA from them would be wrong.
func TestProgressSessions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var out syncBuffer
		env := &Env{Progress: &out, Live: ProgressLines, LiveEvery: 2 * time.Second}
		l := env.liveOf("C=2", runner.Plan{Concurrency: 2, Requests: 3}, "agent session")
		time.Sleep(450 * time.Millisecond)
		for i := range 13 {
			if i > 0 {
				time.Sleep(100 * time.Millisecond)
			}
			l.add(finished(10, record.StatusOK))
		}
		time.Sleep(1 * time.Second) // past the 2 s tick
		synctest.Wait()
		l.end()
		if want := "C=2: 13 requests of 3 agent sessions, 65.0 tok/s, 0 errors, 2.0 s\n"; out.String() != want {
			t.Errorf("got %q, want %q", out.String(), want)
		}
	})
}

// Off and nil: nothing is shown and counting is a no-op.
func TestProgressOff(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	l := (&Env{Progress: &out}).live("C=1", runner.Plan{Requests: 3})
	l.add(finished(1, record.StatusOK))
	l.end()
	if l != nil || out.String() != "" {
		t.Errorf("progress off wrote %q", out.String())
	}
}

// Bars are drawn by mpb (forced to draw to a writer that is no terminal)
// and removed when the stage ends.
func TestProgressBars(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	env := &Env{Progress: &out, Live: ProgressBars, LiveEvery: 20 * time.Millisecond}
	l := env.live("C=8", runner.Plan{Concurrency: 8, Requests: 4})
	for range 2 {
		l.add(finished(10, record.StatusOK))
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "2/4 requests") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	l.end()
	if got := out.String(); !strings.Contains(got, "C=8") || !strings.Contains(got, "2/4 requests") {
		t.Errorf("bar output %q", got)
	}
}

// A sweep with progress on gives the same figures; the lines go to Progress.
func TestSweepWithProgress(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	virtual(t, func(env *Env) {
		var out syncBuffer
		env.Progress, env.Live, env.LiveEvery = &out, ProgressLines, 50*time.Millisecond
		cfg := tinySweep(dir, 4)
		cfg.Load.Requests = 8
		run, err := Sweep(context.Background(), cfg, env)
		if err != nil {
			t.Fatal(err)
		}
		if s := run.Stages[0]; s.OK != 8 {
			t.Errorf("%d ok", s.OK)
		}
		if !strings.Contains(out.String(), "C=4: ") || !strings.Contains(out.String(), "/8 requests") {
			t.Errorf("no progress line in:\n%s", out.String())
		}
	})
}

var _ = io.Discard

// A default-sized stage (requests or a time limit, whichever first) shows
// the nearer end as its ETA, not the requests' pace alone.
func TestProgressETAOfAStageWithATimeLimit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var out syncBuffer
		env := &Env{Progress: &out, Live: ProgressLines, LiveEvery: 5 * time.Second}
		l := env.live("C=1", runner.Plan{Concurrency: 1, Requests: 100, Duration: 30 * time.Second})
		time.Sleep(4 * time.Second)
		l.add(finished(50, record.StatusOK)) // 1 of 100 in 4 s: 396 s at that pace
		time.Sleep(1100 * time.Millisecond)
		l.end()
		if got := out.String(); !strings.HasSuffix(got, "ETA 25.0 s\n") {
			t.Errorf("got %q, want the 30 s limit's ETA of 25.0 s", got)
		}
	})
}

// A stage of the default size ends at its request count or its time,
// whichever comes first: its bar fills by whichever is further.
func TestProgressFractionByTime(t *testing.T) {
	t.Parallel()
	start := time.Unix(1000, 0)
	l := &live{total: 100, dur: 30 * time.Second, start: start}
	for range 10 {
		l.add(finished(1, record.StatusOK))
	}
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{time.Second, 0.1}, {15 * time.Second, 0.5}, {45 * time.Second, 1}} {
		if got := l.fraction(start.Add(c.at)); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("10 of 100 requests at %v of 30 s: fraction %.3f, want %.3f", c.at, got, c.want)
		}
	}
	untimed := &live{total: 100, start: start}
	untimed.add(finished(1, record.StatusOK))
	if got := untimed.fraction(start.Add(time.Hour)); got != 0.01 {
		t.Errorf("a stage with no time cap: fraction %.3f, want 0.01", got)
	}
}

// Requests of 6 s that finish 32 at a time every 6 s: live tok/s looks back
// two request latencies, so it never drops to 0 between the waves (a 3 s
// window reads 0 half the time) and stays within a factor 2 of the truth.
func TestProgressRateSmoothed(t *testing.T) {
	t.Parallel()
	start := time.Unix(1000, 0)
	l := &live{total: 10000, start: start}
	truth := 32.0 * 1000 / 6
	lo, hi := math.Inf(1), 0.0
	for sec := 1; sec <= 90; sec++ {
		if sec%6 == 0 {
			for range 32 {
				r := finished(1000, record.StatusOK)
				r.Sent, r.LastToken = 0, 6*time.Second
				l.add(r)
			}
		}
		rate := l.rate(start.Add(time.Duration(sec) * time.Second))
		if sec >= 24 {
			lo, hi = math.Min(lo, rate), math.Max(hi, rate)
		}
	}
	if lo < truth/2 || hi > truth*2 {
		t.Errorf("live tok/s ranged %.0f–%.0f, truth %.0f", lo, hi, truth)
	}
}

// A huge request count's ETA is capped at a year, never negative (the
// product of elapsed and requests left overflowed a Duration).
func TestProgressETAOfAHugeStage(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := &live{label: "C=1", total: 9_000_000_000_000_000_000, start: time.Now()}
		time.Sleep(10 * time.Second)
		l.add(finished(50, record.StatusOK))
		got := l.status(time.Now())
		if !strings.HasSuffix(got, "ETA 31536000 s") {
			t.Errorf("got %q, want the ETA capped at a year, 31536000 s", got)
		}
	})
}

// A timed stage past its end, a request still in flight (a server frozen
// mid-stream), says what it waits for and how long it may, not "ETA 0.0 s".
func TestProgressTimedDraining(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := &live{label: "C=1", dur: 10 * time.Second, timeout: 10 * time.Minute, start: time.Now()}
		time.Sleep(30 * time.Second)
		got := l.status(time.Now())
		if !strings.HasSuffix(got, "30.0 s of 10.0 s: none starts now; those in flight finish, each within --timeout 600 s") {
			t.Errorf("got %q, want it to say it waits for the requests in flight, up to the timeout", got)
		}
	})
}
