package runner_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/workload"
)

// A server that answers every request 429 with Retry-After: 5 gets about
// one request per 5 s per slot, over real HTTP in virtual time (the
// doubling backoff alone would send 30 a slot in 30 s); each wait is
// recorded on the request after it and lies outside its client queue.
func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	for _, client := range []string{"lean", "net/http"} {
		t.Run(client, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := profile(t, "faults:\n  \"*\": {http_429: 1, retry_after: \"5\"}\n")
				n := memnet.New()
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				srv := sim.New(p, sim.Options{})
				served := make(chan struct{})
				go func() { defer close(served); srv.Serve(ctx, n) }()
				b, err := backend.New(backend.Config{URL: "http://sim", Endpoint: "completions", Model: p.Model, Conns: 2, Dial: n.Dial, NetHTTP: client == "net/http"})
				if err != nil {
					t.Fatal(err)
				}
				wl := workload.Synthetic{InputTokens: 8, OutputTokens: 8, Seed: 1}
				r := &runner.Runner{Backend: b, Source: wl.Request, Clock: record.NewClock()}
				recs := r.Stage(ctx, runner.Plan{Concurrency: 2, Duration: 30 * time.Second})
				b.Close()
				cancel()
				<-served
				// 30 s / 5 s: requests at 0, 5, …, 25 on each of 2 slots.
				if len(recs) < 2*5 || len(recs) > 2*7 {
					t.Fatalf("%d requests in 30 s at Retry-After: 5 on 2 slots, want about 12", len(recs))
				}
				waited := 0
				for _, rec := range recs {
					if rec.HTTPCode != 429 || rec.RetryAfter != 5*time.Second {
						t.Errorf("request %d: HTTP %d, retry after %v; want 429 and 5s", rec.ID, rec.HTTPCode, rec.RetryAfter)
					}
					if q := rec.ClientQueue(); q > time.Millisecond {
						t.Errorf("request %d: client queue %v: the wait was counted as the client's", rec.ID, q)
					}
					if rec.Backoff > 0 {
						waited++
						if rec.Backoff < 5*time.Second || rec.Backoff > 5*time.Second+10*time.Millisecond {
							t.Errorf("request %d waited %v before it, want 5s", rec.ID, rec.Backoff)
						}
					}
				}
				if waited < len(recs)-2 {
					t.Errorf("%d of %d requests record the wait before them, want all but each slot's first", waited, len(recs))
				}
			})
		})
	}
}
