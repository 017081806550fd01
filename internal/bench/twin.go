package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/baseline"
	"github.com/tokperf/tokperf/internal/foreign"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/summary"
	"github.com/tokperf/tokperf/internal/twin"
)

// TwinConfig asks for a digital twin of a result file: fitted to its
// closed-loop levels (or FitLevels of them), its profile written to
// ProfileOut, its figures predicted at Levels and the highest level it
// predicts to meet SLO.
type TwinConfig struct {
	Path string
	// Baseline, instead of Path, is a published table to fit to.
	Baseline   *baseline.Baseline
	FitLevels  []int
	ProfileOut string
	Levels     []int
	Requests   int // per predicted level; 0: max(100, 4×C)
	SLO        record.SLO
	MaxConc    int // the SLO search's bound; 0: 1024
}

// Twin fits the twin and predicts as cfg asks.
func Twin(ctx context.Context, cfg TwinConfig) (*analyze.Twin, error) {
	// The replays take no context: a large level runs for minutes, and
	// Ctrl-C must end the command then, not after them. The replay's
	// goroutine is left to end with the process (its result unread).
	type result struct {
		m   *analyze.Twin
		err error
	}
	done := make(chan result, 1)
	go func() {
		m, err := twinOf(ctx, cfg)
		done <- result{m, err}
	}()
	select {
	case r := <-done:
		return r.m, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("replaying: %w", ctx.Err())
	}
}

// twinOf is Twin's work: the fit, the predictions, the profile written.
func twinOf(ctx context.Context, cfg TwinConfig) (*analyze.Twin, error) {
	var in twin.Input
	var run *analyze.Run // nil for a published table: nothing to gate
	var err error
	if cfg.Baseline != nil {
		in, err = twin.FromTable(tableOf(cfg.Baseline))
		if err != nil {
			return nil, &ConfigError{err}
		}
	} else if in, run, err = TwinInput(ctx, cfg.Path); err != nil {
		return nil, err
	}
	in.Only = cfg.FitLevels
	f, err := twin.Fit(in)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("%s: %w", in.File, err)}
	}
	m := f.Model()
	o := sizedLike(in.Setup.Load, in.Stages)
	if cfg.Requests > 0 {
		o = twin.Options{Requests: func(int) int { return cfg.Requests }}
	} else if cfg.Baseline != nil {
		o = twin.Options{Requests: f.LastRatio()}
	}
	if cfg.Baseline != nil {
		m.Verdict = tableVerdict(f, in, o)
	}
	if len(cfg.Levels) > 0 {
		m.Predicted = f.Predict(cfg.Levels, o)
	}
	if cfg.SLO.Set() {
		upTo := cfg.MaxConc
		if upTo <= 0 {
			upTo = 1024
		}
		s := f.MaxUnderSLO(cfg.SLO, upTo, o)
		m.SLO = &s
	}
	if run != nil {
		run.GateTwin(m)
	}
	if cfg.ProfileOut != "" {
		if err := os.WriteFile(cfg.ProfileOut, []byte(m.Profile), 0o644); err != nil {
			return nil, err
		}
		m.ProfileFile = cfg.ProfileOut
	}
	return m, nil
}

// TwinInput reads a result file for the twin in one pass: its run (the
// same Fold report uses) and what the twin needs of each request.
func TwinInput(ctx context.Context, path string) (twin.Input, *analyze.Run, error) {
	if tool, err := foreign.Sniff(path); err == nil && tool != "" {
		return twin.Input{}, nil, &ConfigError{fmt.Errorf("%s: a %s file holds summaries, not requests: the twin is fitted to a tokperf result file", path, tool)}
	}
	in := twin.Input{File: path}
	fold, err := readFoldEach(ctx, path, false, func(h *results.Header, r *record.Record) {
		in.Setup = h.Setup
		in.Requests = append(in.Requests, twin.FromRecord(r))
	})
	if err != nil {
		return twin.Input{}, nil, err
	}
	run := fold.Run()
	in.Stages = run.Stages
	return in, run, nil
}

// twinCap is the most requests a run may have for its verdict to be
// quoted from a twin: beyond it the twin's input would not be small.
const twinCap = 200_000

// twinFeed gathers what the twin needs of a closed-loop run's requests
// as they are folded, up to twinCap; off for runs it cannot replay.
type twinFeed struct {
	on   bool
	reqs []twin.Request
}

func newTwinFeed(s record.Setup) *twinFeed {
	l := s.Load
	return &twinFeed{on: !raceBuild && len(l.Concurrency) >= 2 && l.Rate == 0 && len(l.Rates) == 0 && l.Trace == "" && l.SliceS == 0 && l.Repeat <= 1 && !s.Workload.Conversations}
}

func (t *twinFeed) add(r *record.Record) {
	if !t.on {
		return
	}
	if len(t.reqs) >= twinCap {
		t.on, t.reqs = false, nil
		return
	}
	t.reqs = append(t.reqs, twin.FromRecord(r))
}

// fit is the twin of the run's own levels (the -c it was given): the
// levels --until-saturated added are held out.
func (t *twinFeed) fit(run *analyze.Run) *twin.Fitted {
	if !t.on {
		return nil
	}
	f, err := twin.Fit(twin.Input{File: run.File, Setup: run.Setup, Stages: run.Stages, Requests: t.reqs, Only: run.Setup.Load.Concurrency})
	if err != nil {
		return nil
	}
	return f
}

// attach puts the twin on the run: each level beyond the given ones
// predicted and set beside what it measured, and, when the verdict says
// throughput is still rising, the levels it suggests predicted and quoted
// in it. The same file gives the same twin, live or read back.
func (t *twinFeed) attach(run *analyze.Run) {
	v := run.Verdict
	given := map[int]bool{}
	for _, c := range run.Setup.Load.Concurrency {
		given[c] = true
	}
	var beyond, suggest []int
	for _, s := range run.Stages {
		if s.Concurrency > 0 && !given[s.Concurrency] && s.OK > 0 {
			beyond = append(beyond, s.Concurrency)
		}
	}
	if v != nil && v.Kind == "rising" && len(beyond) == 0 {
		suggest = []int{v.To * 3 / 2, v.To * 2}
		if cp := run.RunningCap(); cp.N > 0 {
			// no level past the server's cap, as the verdict's advice
			suggest = slices.Compact([]int{min(suggest[0], cp.N), min(suggest[1], cp.N)})
		}
	}
	if len(beyond)+len(suggest) == 0 {
		return
	}
	f := t.fit(run)
	if f == nil {
		return
	}
	m := f.Model()
	m.Profile = "" // tokperf fit writes it
	m.Predicted = f.Predict(append(beyond, suggest...), sizedLike(run.Setup.Load, run.Stages))
	run.GateTwin(m)
	run.Twin = m
	switch q := analyze.Quote(m.Predicted[len(beyond):]); {
	case q == "" || !quotable(m):
		// Nothing to quote, or a twin fitted to too few levels.
	case !m.Basis.Judged():
		// The verdict may stand within a bound the twin's fit cannot.
		v.Text += "; the twin's prediction is " + analyze.NotJudged(m.Basis.Withheld)
	default:
		v.Text += "; " + q + unpinned(m, m.Predicted[len(beyond):])
	}
}

// quotable says the twin was fitted to enough levels for a verdict to
// quote it: from two, the step curve's shape is a guess, and a quoted
// number would read as more than it is.
func quotable(m *analyze.Twin) bool { return len(m.Levels) >= 3 }

// unpinned is the caveat a quoted prediction past the fitted levels
// carries when the fit did not pin the step curve's shape there: its
// intervals then span a straight to a compute-bound growth.
func unpinned(m *analyze.Twin, ps []analyze.Predicted) string {
	if m.Shape == nil || m.Shape.Pinned {
		return ""
	}
	for _, p := range ps {
		if p.Beyond {
			return fmt.Sprintf(" (the step curve past C=%d is not pinned: the intervals span its growing straight to compute-bound)", m.Shape.FromConcurrency)
		}
	}
	return ""
}

// foretell is the twin's prediction of level c before --until-saturated
// runs it, fitted to the given levels: "C=64: the twin predicts …".
func (t *twinFeed) foretell(run *analyze.Run, c int) string {
	f := t.fit(run)
	if f == nil {
		return ""
	}
	n := run.Setup.Load.Requests
	if n == 0 {
		n = DefaultRequests(c)
	}
	if b := run.BasisAt(run.Setup.Load.Concurrency); !b.Judged() {
		return fmt.Sprintf("C=%d next; the twin's prediction is %s", c, analyze.NotJudged(b.Withheld))
	}
	if !quotable(f.Model()) {
		return ""
	}
	p := f.Predict([]int{c}, twin.Options{Requests: func(int) int { return n }})
	e, _ := p[0].Figure("aggregate tok/s")
	if e.Wide() {
		return fmt.Sprintf("C=%d next; the twin fitted to C=%v cannot predict it (%.0f–%.0f tok/s, wider than ±%.0f%%)", c, run.Setup.Load.Concurrency, e.Lo, e.Hi, 100*analyze.Predictable)
	}
	return fmt.Sprintf("C=%d next; the twin fitted to C=%v predicts %.0f tok/s (%.0f–%.0f)", c, run.Setup.Load.Concurrency, e.Value, e.Lo, e.Hi)
}

// tableOf is a baseline's points as a twin's table.
func tableOf(b *baseline.Baseline) twin.Table {
	t := twin.Table{Name: "baseline " + b.Name, InputTokens: b.InputTokens}
	t.Setup.Model, t.Setup.GPUs, t.Setup.GPU = b.Model, b.GPUs, b.GPU
	t.Setup.Server.Engine, _, _ = strings.Cut(b.Engine, " ")
	t.Setup.Workload.OutputTokens = b.OutputTokensMax
	if t.Setup.Workload.OutputTokens == 0 {
		t.Setup.Workload.OutputTokens = b.OutputTokens
	}
	for _, p := range b.Points {
		t.Points = append(t.Points, twin.TablePoint{Concurrency: p.Concurrency, AggregateTokS: p.AggregateTokS, DecodeTokS: p.DecodeTokS, Tokens: p.Tokens})
	}
	return t
}

// tableVerdict is the table's own scaling verdict, quoting the twin's
// prediction of the levels it suggests when throughput is still rising.
func tableVerdict(f *twin.Fitted, in twin.Input, o twin.Options) string {
	var stages []summary.Stage
	for _, s := range in.Stages {
		stages = append(stages, s.Stage)
	}
	v := analyze.Scaling(stages)
	if v.Kind == "rising" && quotable(f.Model()) {
		ps := f.Predict([]int{v.To * 3 / 2, v.To * 2}, o)
		if q := analyze.Quote(ps); q != "" {
			v.Text += "; " + q + unpinned(f.Model(), ps)
		}
	}
	return v.Text
}

// sizedLike sizes predicted levels as the run sized its own: a level it
// ran at the size it ran, another at the run's rule (its --requests, else
// max(100, 4×C)), stopping its sends at the run's stage time limit when
// its stages were of the default size.
func sizedLike(l record.Load, stages []analyze.Stage) twin.Options {
	measured := map[int]int{}
	for _, s := range stages {
		if s.Repeat == 0 && s.Concurrency > 0 {
			measured[s.Concurrency] = s.Requests
		}
	}
	o := twin.Options{Requests: func(c int) int {
		switch {
		case measured[c] > 0:
			return measured[c]
		case l.Requests > 0:
			return l.Requests
		}
		return DefaultRequests(c)
	}}
	if l.Requests == 0 && len(l.RequestsPer) == 0 && l.DurationS == 0 {
		o.Limit = time.Duration(l.MaxStageS * float64(time.Second))
	}
	return o
}
