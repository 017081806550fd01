package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/telemetry"
)

// stage runs one level of the sweep: its plan through the runner, each
// record folded (or sliced) as it finishes, then the stage's server and
// GPU readings; a whole stage's figures join s.figures.
func (s *sweep) stage(ctx context.Context, p runner.Plan) {
	label := stageLabel(p)
	if s.bar != nil && s.shares[p.Index].Idle {
		fmt.Fprintf(s.progress, "%s: %s has no share of this stage: it only takes part in its start\n", label, s.cfg.Shard.Label())
		s.gate(ctx, p)
		return
	}
	fmt.Fprintf(s.progress, "%s: %d warm-up, then %s ...\n", label, p.Warmup, s.what(p))
	var watch *telemetry.Watcher
	if s.scrape {
		// A slice needs a dozen scrapes, not one a second.
		watch = telemetry.Watch(ctx, s.sess.client, backend.Under(s.sess.base, "/metrics"), s.names, s.clock, p.Index, max(time.Second, s.cfg.Load.Slice/12))
	}
	if s.cfg.Prompts != nil && s.r.Conversations == nil {
		// Prompts are built before the stage's schedule starts, so
		// building them never delays a request.
		s.cfg.Prompts.Prepare(s.r.Next(), prepared(p.Warmup+p.Requests, s.r.Shards))
	}
	start := s.clock.Now()
	meter := meterHost(s.env, s.b, start)
	// The stage's figures are built as requests finish; the records
	// themselves live only in the result file.
	s.fold.Grow(p.Index, p.Concurrency, min(p.Requests, 1<<20)) // up to 72 MB ahead; beyond, it grows as it goes
	// Live progress reads counters bumped off the requests' path.
	unit := ""
	if _, ok := s.r.Conversations.(runner.Sessions); ok {
		unit = "agent session"
	} else if s.r.Conversations != nil {
		unit = "conversation"
	}
	show := s.env.liveOf(label, p, unit)
	var sliced *slicing
	if s.cfg.Load.Slice > 0 {
		// Only the current slice's requests are kept; the stage's own
		// figures are read back from the file at the end.
		sliced = startSlicing(p.Index, p.Concurrency, s.cfg.Load.Slice, start, s.setup.SLO, &slicing{clock: s.clock, file: s.file, watch: watch, gpus: s.gpus,
			names: s.names, progress: s.progress, label: label, done: s.env.sliceDone(), host: meterHost(s.env, s.b, start)})
	}
	sinks := s.sinks(p, show, sliced)
	each := func(rec *record.Record) {
		for _, k := range sinks {
			k.add(rec)
		}
	}
	if s.virt != nil {
		if err := s.virt.each(p, each); err != nil {
			s.virtErr = &ConfigError{fmt.Errorf("%s: %w", label, err)}
		}
	} else if err := s.r.Each(ctx, p, each); errors.Is(err, runner.ErrServerGone) {
		s.gone = fmt.Errorf("%s: %w", label, err)
	}
	show.end()
	if sliced != nil {
		sliced.finish(s.clock.Now())
	}
	s.readings(p.Index, start, watch)
	if h, ok := meter.take(p.Index, s.clock.Now()); ok {
		s.file.keep(s.file.w.WriteHost(h))
		s.fold.Host(h)
	}
	if sliced != nil {
		fmt.Fprintf(s.progress, "%s: %d slices\n", label, sliced.count)
		return
	}
	fig := s.fold.Figures(p.Index)
	s.figures = append(s.figures, fig)
	fmt.Fprintf(s.progress, "%s: %.1f tok/s aggregate, %d ok, %.1f s\n", label, fig.AggregateTokS, fig.OK, fig.WallS)
}

// sinks are where stage p's measured records go as they finish: the fold
// and the twin's feed (or, sliced, the current slice only), the live
// progress and the live output where there are.
func (s *sweep) sinks(p runner.Plan, show *live, sliced *slicing) []recordSink {
	out := []recordSink{sinkFunc(s.fold.Add), s.feed}
	if sliced != nil {
		out = []recordSink{sliced}
	}
	if show != nil {
		out = append(out, show)
	}
	if s.output != nil {
		s.output.stage(p)
		out = append(out, s.output)
	}
	return out
}

// stageLabel is how progress lines name stage p: C=8, rate=4/s, trace
// (2.5/s), with #2 for its second repeat.
func stageLabel(p runner.Plan) string {
	label := fmt.Sprintf("C=%d", p.Concurrency)
	if p.Rate > 0 {
		label = fmt.Sprintf("rate=%g/s", p.Rate)
	}
	if p.At != nil {
		label = fmt.Sprintf("trace (%.3g/s)", p.Rate)
	}
	if p.Repeat > 0 {
		label += fmt.Sprintf(" #%d", p.Repeat+1)
	}
	return label
}

// what is how a stage's start line says what it sends.
func (s *sweep) what(p runner.Plan) string {
	if _, ok := s.r.Conversations.(runner.Sessions); ok {
		return fmt.Sprintf("%d agent sessions, turn by turn", p.Requests)
	}
	if s.r.Conversations != nil {
		return fmt.Sprintf("%d conversations, turn by turn", p.Requests)
	}
	switch {
	case p.Requests == 0:
		return "requests for " + p.Duration.String()
	case p.Duration > 0:
		return record.Plural(p.Requests, "request") + " or " + p.Duration.String() + ", whichever comes first"
	}
	return record.Plural(p.Requests, "request")
}

// readings writes stage's server and GPU samples (those since start) to
// the result file and folds them.
func (s *sweep) readings(stage int, start time.Duration, watch *telemetry.Watcher) {
	if watch != nil {
		samples := watch.Stop()
		s.file.keep(s.file.w.WriteMetrics(samples))
		s.fold.Metrics(samples)
	}
	if s.gpus != nil {
		var mine []record.GPUSample
		for _, g := range s.gpus.Samples() {
			if g.At >= start {
				g.Stage = stage
				mine = append(mine, g)
			}
		}
		s.file.keep(s.file.w.WriteGPU(stage, mine))
		s.fold.GPU(mine)
	}
}
