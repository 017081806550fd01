package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/term"
)

// ProgressMode says how a stage's live progress is shown while it runs.
type ProgressMode int

const (
	ProgressOff   ProgressMode = iota // nothing but the stage's start and end lines
	ProgressLines                     // a plain line every LiveEvery (CI logs)
	ProgressBars                      // a bar redrawn in place (a terminal)
)

// liveEvery is how often ProgressLines writes a line when Env.LiveEvery is 0.
const liveEvery = 5 * time.Second

// liveWindow is how far back live tok/s looks at least; it looks back two
// mean request latencies when that is longer, so tokens counted as
// requests finish do not make the figure jump between 0 and a burst.
const liveWindow = 3 * time.Second

// live is one stage's progress: requests done of the stage's total, the
// tokens they brought, errors, elapsed time and what is left. The records
// goroutine bumps its counters as requests finish (off every request's
// path: runner.Each hands records over a queue); the display reads them
// on its own ticker, so showing progress never delays a request.
type live struct {
	label string
	total int // measured requests, 0 for a timed stage
	// conversations are a stage of conversations' (agent sessions')
	// count, in their unit, total then 0: their requests are not known
	// before (liveOf).
	conversations int
	unit          string
	dur           time.Duration // a timed stage's length
	// timeout is each request's (--timeout): what the requests still in
	// flight after a timed stage's end may take.
	timeout time.Duration
	start   time.Time

	done, errs, tokens atomic.Int64
	e2eNs              atomic.Int64 // Σ E2E of the ok requests done, for the window
	okDone             atomic.Int64

	mu   sync.Mutex
	seen []snapshot // recent (time, tokens), for live tok/s
	stop func()
}

type snapshot struct {
	at     time.Time
	tokens int64
}

// add counts one finished measured request.
func (l *live) add(r *record.Record) {
	if l == nil {
		return
	}
	l.done.Add(1)
	l.tokens.Add(int64(r.OutputTokens))
	if !r.OK() && r.Status != record.StatusCancelled {
		l.errs.Add(1)
	}
	if e2e, ok := r.E2E(); ok && r.OK() {
		l.e2eNs.Add(int64(e2e))
		l.okDone.Add(1)
	}
}

// window is how far back live tok/s looks: liveWindow, or two mean
// request latencies when longer.
func (l *live) window() time.Duration {
	w := liveWindow
	if n := l.okDone.Load(); n > 0 {
		w = max(w, 2*time.Duration(l.e2eNs.Load()/n))
	}
	return w
}

// fraction is how far the stage is, 0..1: the share of its requests done,
// or of its time gone where that is further (a stage of the default size
// also ends when its time is up).
func (l *live) fraction(now time.Time) float64 {
	f := 0.0
	if l.total > 0 {
		f = float64(l.done.Load()) / float64(l.total)
	}
	if l.dur > 0 {
		f = max(f, float64(now.Sub(l.start))/float64(l.dur))
	}
	return min(max(f, 0), 1)
}

// end stops the display; the stage's end line follows it.
func (l *live) end() {
	if l != nil && l.stop != nil {
		l.stop()
	}
}

// rate is tok/s of the requests that finished over the last liveWindow.
func (l *live) rate(now time.Time) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	tok := l.tokens.Load()
	l.seen = append(l.seen, snapshot{now, tok})
	window := l.window()
	for len(l.seen) > 2 && now.Sub(l.seen[1].at) >= window {
		l.seen = l.seen[1:]
	}
	first := l.seen[0]
	if len(l.seen) == 1 {
		first = snapshot{l.start, 0}
	}
	if d := now.Sub(first.at).Seconds(); d > 0 {
		return float64(tok-first.tokens) / d
	}
	return 0
}

// status is the progress as words: done of total, tok/s, errors,
// elapsed and ETA (once a request has finished).
func (l *live) status(now time.Time) string {
	done, errs := l.done.Load(), l.errs.Load()
	elapsed := now.Sub(l.start)
	var b strings.Builder
	if l.total > 0 {
		fmt.Fprintf(&b, "%d/%d requests", done, l.total)
	} else {
		fmt.Fprint(&b, record.Plural(int(done), "request"))
		if l.conversations > 0 {
			fmt.Fprintf(&b, " of %s", record.Plural(l.conversations, l.unit))
		}
	}
	fmt.Fprintf(&b, ", %.1f tok/s, %d errors, %s", l.rate(now), errs, seconds(elapsed))
	switch {
	case l.total > 0 && done > 0 && int(done) < l.total:
		// In float seconds, capped: the product overflows a Duration
		// (a negative ETA) on huge counts.
		eta := time.Duration(min(elapsed.Seconds()*float64(l.total-int(done))/float64(done), maxETA.Seconds()) * float64(time.Second))
		if l.dur > 0 {
			// A stage of the default size also ends when its time is up
			// (the requests then in flight still finish).
			eta = min(eta, max(0, l.dur-elapsed))
		}
		fmt.Fprintf(&b, ", ETA %s", seconds(eta))
	case l.total == 0 && l.dur > 0 && elapsed >= l.dur && l.timeout > 0:
		// Not "ETA 0.0 s" for as long as a stalled request holds the end.
		fmt.Fprintf(&b, " of %s: none starts now; those in flight finish, each within --timeout %s", seconds(l.dur), seconds(l.timeout))
	case l.total == 0 && l.dur > 0:
		fmt.Fprintf(&b, " of %s, ETA %s", seconds(l.dur), seconds(max(0, l.dur-elapsed)))
	}
	return b.String()
}

// maxETA is the longest ETA shown: a year (a longer one says no more).
const maxETA = 365 * 24 * time.Hour

func seconds(d time.Duration) string {
	if d >= 100*time.Second {
		return fmt.Sprintf("%.0f s", d.Seconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// live starts the display of a stage's progress as the Env asks; nil when
// it asks for none.
func (e *Env) live(label string, p runner.Plan) *live { return e.liveOf(label, p, "") }

// liveOf is live for a stage whose Requests count conversations in unit
// ("conversation", "agent session"), each of many requests: its status
// counts requests without a total to count down to. "": requests.
func (e *Env) liveOf(label string, p runner.Plan, unit string) *live {
	if e == nil || e.Live == ProgressOff {
		return nil
	}
	l := &live{label: label, total: p.Requests, dur: p.Duration, timeout: p.Timeout, start: time.Now()}
	if unit != "" {
		l.total, l.conversations, l.unit = 0, p.Requests, unit
	}
	switch e.Live {
	case ProgressLines:
		l.lines(e.progress(), orDefault(e.LiveEvery, liveEvery))
	case ProgressBars:
		l.bars(e.progress(), e.LiveEvery)
	}
	return l
}

func orDefault(d, or time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return or
}

// lines writes the status as a plain line every interval.
func (l *live) lines(w io.Writer, every time.Duration) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				fmt.Fprintf(w, "%s: %s\n", l.label, l.status(now))
			case <-quit:
				return
			}
		}
	}()
	l.stop = func() { close(quit); <-done }
}

// bars draws a bar of the stage's fraction done (requests, or time where
// that is further) with the status beside it, redrawn in place by mpb; refresh 0 is
// mpb's pace for a terminal, a refresh given also draws to a writer that
// is not one (tests).
func (l *live) bars(w io.Writer, refresh time.Duration) {
	// The bars are drawn with escape sequences: past term's escaping.
	opts := []mpb.ContainerOption{mpb.WithOutput(term.Raw(w)), mpb.WithWidth(30)}
	if refresh > 0 {
		opts = append(opts, mpb.WithRefreshRate(refresh), mpb.WithAutoRefresh())
	}
	p := mpb.New(opts...)
	const total = 1000 // per mille of fraction()
	bar := p.AddBar(total, mpb.BarRemoveOnComplete(),
		mpb.PrependDecorators(decor.Name(l.label+" ")),
		mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return " " + l.status(time.Now()) })))
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				bar.SetCurrent(min(int64(total*l.fraction(now)), total-1))
			case <-quit:
				return
			}
		}
	}()
	l.stop = func() {
		close(quit)
		<-done
		bar.SetTotal(-1, true)
		p.Wait()
	}
}
