package shard

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// The clock offset of a shard is the server's clock minus this machine's,
// read from the HTTP Date header of responses from one URL. A Date has
// one-second resolution, but the moment it turns to the next second can be
// caught: a response that says D followed by one that says D+1 puts the
// server's second D+1 between the first request's send and the second's
// answer. A coarse pass (requests 20 ms apart) finds that edge to tens of
// milliseconds; the passes after it wait for the next edge, a second
// later, and send back to back around it, which pins it to about one round
// trip. The narrowest edge found gives the offset, and its half-width the
// uncertainty.

// dateProbe is one request: when it was sent and answered (local wall
// clock) and the second the server's Date named.
type dateProbe struct {
	sent, answered time.Time
	date           int64 // unix seconds
}

// clockEdges is how many fine edges the estimate waits for after the coarse one.
const clockEdges = 2

// ClockOffset estimates the server's clock minus the local one from url's
// Date headers; an estimate that could not be had says why and is 0.
func ClockOffset(ctx context.Context, client *http.Client, url string) record.ClockOffset {
	d := &dater{client: client, url: url}
	out := record.ClockOffset{Method: "http-date", URL: url}
	fail := func(err error) record.ClockOffset {
		out.Method, out.Error, out.OffsetNs, out.UncertaintyNs, out.Probes = "none", err.Error(), 0, 0, d.probes
		return out
	}
	lo, hi, second, err := d.edge(ctx, 20*time.Millisecond, 80)
	if err != nil {
		return fail(err)
	}
	best := func(lo, hi time.Time, second int64) {
		mid := lo.Add(hi.Sub(lo) / 2)
		u := hi.Sub(lo) / 2
		if out.Probes == 0 || int64(u) < out.UncertaintyNs {
			out.OffsetNs, out.UncertaintyNs = time.Unix(second, 0).Sub(mid).Nanoseconds(), u.Nanoseconds()
			out.Probes = 1 // marks an estimate; the count is set at the end
		}
	}
	best(lo, hi, second)
	var mids []time.Time // the fine edges, a second apart on a true clock
	var halves []time.Duration
	for range clockEdges {
		// The next edge is a second after this one on the local clock too;
		// start a little before its earliest.
		next := lo.Add(time.Second - 5*time.Millisecond)
		if err := sleepCtx(ctx, time.Until(next)); err != nil {
			return fail(err)
		}
		l, h, s, err := d.edge(ctx, 200*time.Microsecond, 2000)
		if err != nil {
			break // the coarse estimate stands
		}
		best(l, h, s)
		mids, halves = append(mids, l.Add(h.Sub(l)/2)), append(halves, h.Sub(l)/2)
		lo = l
	}
	out.Probes = d.probes
	if len(mids) == 2 {
		if err := timerDate(mids, halves, out.OffsetNs); err != nil {
			return fail(err)
		}
	}
	return out
}

// timerDate says why two fine edges (their middles and half-widths) that
// are not a second apart make the estimate unusable. A server that stamps
// each answer with its clock turns its Date a second after the last turn;
// one that refreshes a cached Date on a timer of its own (uvicorn: vLLM,
// SGLang) turns it when the timer fires, up to a second late and drifting.
// Such an estimate may be a second off, and drift between shards: this
// machine's clock (NTP's) is the better guess.
func timerDate(mids []time.Time, halves []time.Duration, offsetNs int64) error {
	d := mids[1].Sub(mids[0]) - time.Second
	if slack := halves[0] + halves[1] + 2*time.Millisecond; d > slack || d < -slack {
		return fmt.Errorf("its Date turned %+.1f ms off a second after its last turn: the server refreshes it on a timer (uvicorn: vLLM, SGLang), so the estimate (%+.1f ms) may be a second off and is not used; give --clock-url a server that stamps each answer (Go, nginx)", float64(d)/1e6, float64(offsetNs)/1e6)
	}
	return nil
}

// dater reads url's Date headers, counting its requests.
type dater struct {
	client *http.Client
	url    string
	probes int
}

// probe is one request to the URL.
func (d *dater) probe(ctx context.Context) (dateProbe, error) {
	d.probes++
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, d.url, nil)
	if err != nil {
		return dateProbe{}, err
	}
	sent := time.Now()
	resp, err := d.client.Do(req)
	answered := time.Now()
	if err != nil {
		return dateProbe{}, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	date, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return dateProbe{}, fmt.Errorf("no Date header in its answer (%s)", resp.Status)
	}
	return dateProbe{sent: sent, answered: answered, date: date.Unix()}, nil
}

// edge sends probes gap apart until the Date turns, at most limit of
// them: the server's new second began between lo and hi.
func (d *dater) edge(ctx context.Context, gap time.Duration, limit int) (lo, hi time.Time, second int64, err error) {
	prev, err := d.probe(ctx)
	if err != nil {
		return
	}
	for range limit {
		if gap > 0 {
			if err = sleepCtx(ctx, gap); err != nil {
				return
			}
		}
		var p dateProbe
		if p, err = d.probe(ctx); err != nil {
			return
		}
		if p.date > prev.date {
			return prev.sent, p.answered, p.date, nil
		}
		prev = p
	}
	return lo, hi, 0, fmt.Errorf("the Date header did not turn to the next second over %d requests", limit)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
