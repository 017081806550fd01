package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/schedule"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
	"github.com/tokperf/tokperf/internal/telemetry"
	"github.com/tokperf/tokperf/internal/workload"
)

// Load is how many requests a job sends and when, stage by stage.
type Load struct {
	// Concurrency is one closed-loop stage per level; with Rates, its
	// single value caps the requests in flight (when CapSet).
	Concurrency []int
	CapSet      bool
	// Rates is one open-loop stage per rate (requests/s).
	Rates    []float64
	Arrival  schedule.Arrival // poisson or constant
	Requests int              // measured per stage; 0: the default (DefaultRequests)
	// RequestsPer is the measured requests of each stage, in order, when
	// they differ (the seed article's 4, 8, 32, 64); it wins over Requests.
	RequestsPer []int
	Duration    time.Duration // start requests for this long per stage instead
	// MaxStageTime ends a stage of default size early: no request starts
	// after it (0: DefaultMaxStageTime; negative: none).
	MaxStageTime time.Duration
	Warmup       int           // per stage; -1: one round at the stage's concurrency
	Timeout      time.Duration // per request
	Seed         int64
	// UntilSaturated keeps doubling concurrency while aggregate grows 10%
	// or more per doubling (up to MaxConcurrency), then measures the level
	// between the last two.
	UntilSaturated bool
	MaxConcurrency int
	// Think is the wait between a conversation's turns.
	Think time.Duration
	// Trace, when set, replaces every stage by one open loop that sends
	// the prompts' trace at its timestamps, Speedup times as fast (its
	// first Requests when set, those before Duration when set).
	Trace   *workload.Trace
	Speedup float64
	// Slice cuts every stage into slices of this length, each written to
	// the result file as it ends, and judges their stability; the stage
	// keeps no request of a finished slice. 0: no slices.
	Slice time.Duration
	// Repeat runs every stage this many times, interleaved (all stages,
	// then all again), each repeat a stage of its own in the file; 0 or 1:
	// once.
	Repeat int
}

// Plans are the load's stages: each level once, or with Repeat the levels
// over and over (1 2 3, 1 2 3 …), each repeat a stage of its own with a
// seed of its own.
func (l Load) Plans() []runner.Plan {
	once := l.plansOnce()
	out := once
	for r := 1; r < l.Repeat; r++ {
		for _, p := range once {
			p.Index += r * len(once)
			p.Repeat = r
			p.Seed += int64(r) * 7919
			out = append(out, p)
		}
	}
	return out
}

func (l Load) plansOnce() []runner.Plan {
	var out []runner.Plan
	if l.Trace != nil {
		return []runner.Plan{l.tracePlan()}
	}
	if len(l.Rates) > 0 {
		cap := 0
		if l.CapSet {
			cap = l.Concurrency[0]
		}
		for i, r := range l.Rates {
			n, d := l.requests(i), l.Duration
			if n == 0 && d == 0 {
				n, d = max(MinRequests, int(60*r)), l.stageTime()
			}
			out = append(out, runner.Plan{Index: i, Concurrency: cap, Rate: r, Arrival: l.Arrival,
				Requests: n, Duration: d, Warmup: max(l.Warmup, 0), Timeout: l.Timeout, Seed: l.Seed + int64(i)})
		}
		return out
	}
	for i, c := range l.Concurrency {
		out = append(out, l.level(i, c))
	}
	return out
}

// level is the closed-loop stage at concurrency c.
func (l Load) level(index, c int) runner.Plan {
	st := runner.Plan{Index: index, Concurrency: c, Requests: DefaultRequests(c), Duration: l.stageTime(), Warmup: c, Timeout: l.Timeout, Seed: l.Seed, Think: l.Think}
	if n := l.requests(index); n > 0 || l.Duration > 0 {
		st.Requests, st.Duration = n, l.Duration
	}
	if l.Warmup >= 0 {
		st.Warmup = l.Warmup
	}
	return st
}

// MinRequests is the fewest measured requests a default stage asks for:
// enough for a p99 that is not simply the largest value.
const MinRequests = 100

// DefaultMaxStageTime ends a default-sized stage early, so the first
// sweep on a slow server (or the embedded simulator) ends in minutes; the
// table then says how few samples are behind each percentile.
const DefaultMaxStageTime = 30 * time.Second

// DefaultRequests is a closed-loop stage's measured requests when none are
// asked for: max(MinRequests, 4×C), four rounds at high concurrency,
// rounded up to whole rounds of C so the last round does not drain alone.
func DefaultRequests(c int) int {
	n := max(MinRequests, 4*c)
	return (n + c - 1) / c * c
}

// requests is stage i's asked size, 0 for the default.
func (l Load) requests(i int) int {
	if i < len(l.RequestsPer) {
		return l.RequestsPer[i]
	}
	return l.Requests
}

// stageTime is the time limit of a default-sized stage, 0 for none.
func (l Load) stageTime() time.Duration {
	switch {
	case l.MaxStageTime < 0:
		return 0
	case l.MaxStageTime == 0:
		return DefaultMaxStageTime
	}
	return l.MaxStageTime
}

// record is the load as the result header keeps it.
func (l Load) record() record.Load {
	out := record.Load{Requests: l.Requests, RequestsPer: l.RequestsPer, DurationS: l.Duration.Seconds(), Warmup: l.Warmup, TimeoutS: l.Timeout.Seconds(), SliceS: l.Slice.Seconds()}
	if l.Requests == 0 && len(l.RequestsPer) == 0 && l.Duration == 0 && l.Trace == nil {
		out.MaxStageS = l.stageTime().Seconds()
	}
	if l.Repeat > 1 {
		out.Repeat = l.Repeat
	}
	if l.Trace != nil {
		p := l.tracePlan()
		out.Rate, out.Arrival, out.Trace, out.Speedup = p.Rate, "trace", l.Trace.Name, l.speedup()
		out.Requests, out.Warmup = p.Requests, 0
		if l.CapSet {
			out.Concurrency = l.Concurrency
		}
	} else if len(l.Rates) > 0 {
		out.Rate, out.Rates, out.Arrival = l.Rates[0], l.Rates, string(l.Arrival)
		if l.CapSet {
			out.Concurrency = l.Concurrency
		}
	} else {
		out.Concurrency = l.Concurrency
	}
	return out
}

// SweepConfig is a run or a sweep.
type SweepConfig struct {
	Command  string // run or sweep, for the setup and the file name
	Target   Target
	Workload workload.Synthetic
	// Prompts, when set, is where requests come from instead of
	// Workload's fixed word list (prose, a corpus, a dataset); Workload
	// still gives the sampling settings the header records.
	Prompts *workload.Workload
	// ServerPrompts, when set, builds Prompts once the server is known,
	// counted by the server's own tokenizer (--tokenizer server).
	ServerPrompts func(workload.Tokenizer) (*workload.Workload, error)
	Load          Load
	SLO           record.SLO
	Out           string // result file; empty: ./tokperf-results/TIMESTAMP-COMMAND.jsonl; "-": Stdout
	// Stdout is where Out "-" writes the result file (kubectl logs).
	Stdout io.Writer
	// Shard, when set, makes this process one shard of a run split
	// across processes: its share of each stage, started together.
	Shard *Shard
}

// Sweep runs every stage of the load against the target, writes each
// record to the result file as it finishes and folds it into the run's
// model, which it returns (its File is the result file). An interrupted
// sweep returns what finished, its Integrity marked interrupted; one whose
// server stopped answering stops there and returns what finished with an
// error wrapping runner.ErrServerGone.
func Sweep(ctx context.Context, cfg SweepConfig, env *Env) (*analyze.Run, error) {
	plans := cfg.Load.Plans()
	var shares []record.ShardStage
	if s := cfg.Shard; s != nil {
		if err := s.check(&cfg); err != nil {
			return nil, err
		}
		plans, shares = s.plans(plans)
	}
	maxConns := 1
	for _, p := range plans {
		maxConns = max(maxConns, p.Concurrency, int(p.Rate*4))
	}
	sess, err := Connect(ctx, cfg.Command, cfg.Target, env)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	setup := sess.Setup
	var serverTok *backend.ServerTokenizer
	if cfg.ServerPrompts != nil {
		if serverTok, err = backend.NewServerTokenizer(ctx, sess.client, sess.base, setup.Server.Engine, setup.Model, sess.t.APIKey); err != nil {
			return nil, &ConfigError{err}
		}
		if cfg.Prompts, err = cfg.ServerPrompts(serverTok); err != nil {
			return nil, err
		}
		defer cfg.Prompts.Close()
	}
	setup.Workload = record.Workload{InputTokens: cfg.Workload.InputTokens, OutputTokens: cfg.Workload.OutputTokens, IgnoreEOS: cfg.Workload.IgnoreEOS, Seed: cfg.Workload.Seed, SharedPrefix: cfg.Workload.SharedPrefix, PrefixGroups: cfg.Workload.PrefixGroups}
	setup.Sampling = record.Sampling{Temperature: cfg.Workload.Temperature}
	setup.SLO = cfg.SLO
	source := cfg.Workload.Request
	if p := cfg.Prompts; p != nil {
		info := p.Info()
		setup.Workload.Prompts, setup.Workload.Tokenizer = info.String(), info.Tokenizer
		if _, fixed := cfg.Prompts.Input(); !fixed {
			setup.Workload.Input = info.Input
		}
		if _, fixed := cfg.Prompts.Output(); !fixed {
			setup.Workload.Output = info.Output
		}
		setup.Workload.Reuse = info.Source == "trace" || info.Conversations
		setup.Workload.Conversations, setup.Workload.Turns, setup.Workload.OwnAnswers = info.Conversations, info.Turns, info.OwnAnswers
		if info.Conversations {
			setup.Workload.ThinkS = cfg.Load.Think.Seconds()
		}
		if info.Source == "trace" {
			setup.Workload.Input, setup.Workload.Output, setup.Workload.InputTokens, setup.Workload.OutputTokens = "trace", "trace", 0, 0
		}
		if info.Source == "dataset" {
			// The file's prompts and, where it gives them, its lengths.
			setup.Workload.Input, setup.Workload.InputTokens = "dataset", 0
			if info.Output == "" || info.FileOutputs > 0 {
				// Requests ask for the file's lengths, not --output-tokens.
				setup.Workload.Output = "dataset"
			}
		}
		source = p.Request
	}
	if setup.Server.Engine == "llamacpp" {
		if cfg.Prompts != nil && cfg.Prompts.Conversational() && !sess.t.CachePromptSet {
			sess.t.CachePrompt = true // conversations exist to measure the cache
			setup.CachePrompt = "conversations"
		} else if sess.t.CachePrompt {
			setup.CachePrompt = "asked"
		}
	}
	b, err := sess.Backend(ctx, setup.Endpoint, maxConns)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	setup.Route, setup.Client = b.Route(), b.Client()
	if setup.TLS, err = b.Negotiated(ctx); err != nil {
		return nil, err
	}
	if cfg.Target.UsageFinal {
		setup.Usage = "final"
	}
	setup.Load = cfg.Load.record()
	if len(cfg.Load.Rates) > 0 || cfg.Load.Trace != nil {
		// An open loop's sends are as punctual as this machine's timers:
		// lateness counts only past their own oversleep.
		late := TimerLate(100, 500*time.Microsecond)
		setup.Load.TimerLateP99Ms = record.Ms(late)
		fmt.Fprintf(env.progress(), "timers here wake %.2f ms late (p99): an open-loop send is late past %.2f ms\n", record.Ms(late), record.Ms(late+summary.LateThreshold))
	}

	// GPU telemetry from a DCGM exporter (--gpu-metrics) or where
	// nvidia-smi exists: one watcher for the run; its first readings name
	// the GPUs in the header.
	clock := record.NewClock()
	gpus, err := sess.watchGPUs(ctx, clock)
	if err != nil {
		return nil, err
	}
	if gpus != nil {
		defer gpus.Stop()
		for deadline := time.Now().Add(time.Second); len(gpus.Samples()) == 0 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		// Detected GPUs describe a real server (on this machine, or behind
		// the exporter); a simulated one keeps its profile's unless its
		// exporter was asked for, and --gpus always wins.
		if st := analyze.SummarizeGPUs(gpus.Samples(), 0, clock.Now()); st.GPUs > 0 && (!setup.Simulated || cfg.Target.GPUMetrics != "") && cfg.Target.GPUs == 0 {
			setup.GPUs, setup.GPU = st.GPUs, st.Names[0]
		}
		setup.GPUMetrics = sess.gpuMetrics()
	}
	var bar *barrier
	if cfg.Shard != nil {
		setup.Shard, bar = cfg.Shard.start(ctx, sess, shares, env.progress())
	}
	out, w, err := create(cfg.Out, cfg.Command, setup, clock, cfg.Stdout)
	if err != nil {
		return nil, err
	}
	file := &sink{w: w}
	fold := analyze.NewFold(setup, out)
	feed := newTwinFeed(setup)
	r := &runner.Runner{Backend: b, Source: source, Clock: clock, Sink: file.write}
	var barErr error // a shard's barrier failed: the run stops
	if bar != nil {
		r.Shard, r.Shards = cfg.Shard.Index, cfg.Shard.Count
		r.Gate = func(ctx context.Context, p runner.Plan) error {
			err := bar.gate(ctx, p.Index, clock, file, w)
			if ctx.Err() == nil {
				barErr = err // an interrupt is no barrier's failure
			}
			return err
		}
	}
	if cfg.Prompts != nil && cfg.Prompts.Conversational() {
		r.Conversations = cfg.Prompts
	}
	progress := env.progress()
	env.started(setup)
	names := engine.MetricNames(setup.Server.Engine)
	scrape := false
	if names.Generated != "" {
		_, err := telemetry.Scrape(ctx, sess.client, backend.Under(sess.base, "/metrics"), names)
		scrape = err == nil
	}
	var figures []summary.Stage
	var gone error // the server stopped answering
	stage := func(p runner.Plan) {
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
		what := plural(p.Requests, "request")
		switch {
		case p.Requests == 0:
			what = "requests for " + p.Duration.String()
		case p.Duration > 0:
			what += " or " + p.Duration.String() + ", whichever comes first"
		}
		if r.Conversations != nil {
			what = fmt.Sprintf("%d conversations, turn by turn", p.Requests)
		}
		if bar != nil && shares[p.Index].Idle {
			fmt.Fprintf(progress, "%s: %s has no share of this stage: it only takes part in its start\n", label, cfg.Shard.label())
			if err := bar.gate(ctx, p.Index, clock, file, w); ctx.Err() == nil {
				barErr = err
			}
			return
		}
		fmt.Fprintf(progress, "%s: %d warm-up, then %s ...\n", label, p.Warmup, what)
		var watch *telemetry.Watcher
		if scrape {
			// A slice needs a dozen scrapes, not one a second.
			watch = telemetry.Watch(ctx, sess.client, backend.Under(sess.base, "/metrics"), names, clock, p.Index, max(time.Second, cfg.Load.Slice/12))
		}
		if cfg.Prompts != nil && r.Conversations == nil {
			// Prompts are built before the stage's schedule starts, so
			// building them never delays a request.
			cfg.Prompts.Prepare(r.Next(), prepared(p.Warmup+p.Requests, r.Shards))
		}
		start := clock.Now()
		// The stage's figures are built as requests finish; the records
		// themselves live only in the result file.
		fold.Grow(p.Index, p.Concurrency, min(p.Requests, 1<<20)) // up to 72 MB ahead; beyond, it grows as it goes
		// Live progress reads counters bumped off the requests' path.
		show := env.live(label, p)
		each := func(rec *record.Record) { fold.Add(rec); show.add(rec); feed.add(rec) }
		var sliced *slicing
		if cfg.Load.Slice > 0 {
			// Only the current slice's requests are kept; the stage's own
			// figures are read back from the file at the end.
			sliced = startSlicing(p.Index, p.Concurrency, cfg.Load.Slice, start, setup.SLO, &slicing{clock: clock, file: file, watch: watch, gpus: gpus,
				names: names, progress: progress, label: label, done: env.sliceDone()})
			each = func(rec *record.Record) { sliced.add(rec); show.add(rec) }
		}
		if err := r.Each(ctx, p, each); errors.Is(err, runner.ErrServerGone) {
			gone = fmt.Errorf("%s: %w", label, err)
		}
		show.end()
		if sliced != nil {
			sliced.finish(clock.Now())
		}
		if watch != nil {
			samples := watch.Stop()
			file.keep(w.WriteMetrics(samples))
			fold.Metrics(samples)
		}
		if gpus != nil {
			var mine []record.GPUSample
			for _, g := range gpus.Samples() {
				if g.At >= start {
					g.Stage = p.Index
					mine = append(mine, g)
				}
			}
			file.keep(w.WriteGPU(p.Index, mine))
			fold.GPU(mine)
		}
		if sliced != nil {
			fmt.Fprintf(progress, "%s: %d slices\n", label, sliced.count)
			return
		}
		s := fold.Figures(p.Index)
		figures = append(figures, s)
		fmt.Fprintf(progress, "%s: %.1f tok/s aggregate, %d ok, %.1f s\n", label, s.AggregateTokS, s.OK, s.WallS)
	}
	for _, p := range plans {
		stage(p)
		if ctx.Err() != nil || gone != nil || barErr != nil {
			break
		}
	}
	for cfg.Load.UntilSaturated && ctx.Err() == nil && gone == nil && len(figures) >= 2 {
		next, last, why := nextLevel(figures, cfg.Load, setup.SLO)
		if why != "" {
			fmt.Fprintf(progress, "--until-saturated: %s\n", why)
		}
		if next == 0 {
			break
		}
		if msg := feed.foretell(fold.Run(), next); msg != "" {
			fmt.Fprintf(progress, "--until-saturated: %s\n", msg)
		}
		stage(cfg.Load.level(len(figures), next))
		if last {
			break
		}
	}
	interrupted := ctx.Err() != nil
	fold.Integrity(false, true, interrupted)
	if err := file.close(interrupted); err != nil {
		return nil, err
	}
	if barErr != nil {
		return fold.Run(), fmt.Errorf("%s stopped: %w", cfg.Shard.label(), barErr)
	}
	if serverTok != nil && serverTok.Err() != nil {
		return fold.Run(), fmt.Errorf("the server's tokenizer failed during the run, so some prompt lengths are wrong: %w", serverTok.Err())
	}
	if cfg.Load.Slice > 0 {
		// A sliced run kept no stage's requests: its model is the file's,
		// read back as report does.
		if fold, err = readFold(context.WithoutCancel(ctx), out); err != nil {
			return nil, err
		}
	}
	if gone != nil {
		// What finished is kept and returned; the run stops here.
		return fold.Run(), fmt.Errorf("stopped early, %s is not answering: %w", setup.URL, gone)
	}
	run := fold.Run()
	if !interrupted {
		feed.attach(run)
	}
	return run, nil
}

// nextLevel is --until-saturated's next concurrency after the levels so
// far: double while aggregate grows 10% or more per doubling; once it does
// not, the level between the last two, which is the last. 0 stops, with a
// reason to print where there is one.
func nextLevel(levels []summary.Stage, l Load, slo record.SLO) (next int, last bool, why string) {
	a, b := levels[len(levels)-2], levels[len(levels)-1]
	switch {
	case b.OK < b.Requests:
		return 0, true, fmt.Sprintf("stopping, requests failed at C=%d", b.Concurrency)
	case slo.Set() && float64(b.SLOMet) < 0.9*float64(b.OK):
		return 0, true, fmt.Sprintf("stopping, only %d of %s met the SLO at C=%d", b.SLOMet, plural(b.OK, "request"), b.Concurrency)
	case analyze.PerDoubling(a, b) < analyze.Saturation:
		if mid := int(math.Round(math.Sqrt(float64(a.Concurrency * b.Concurrency)))); mid > a.Concurrency && mid < b.Concurrency {
			return mid, true, ""
		}
		return 0, true, ""
	case b.Concurrency*2 > l.MaxConcurrency:
		return 0, true, fmt.Sprintf("still rising at C=%d; --max-concurrency %d stops it", b.Concurrency, l.MaxConcurrency)
	}
	return b.Concurrency * 2, false, ""
}

// TimerLate is how late a timer of d fires on this machine, the p99 of n.
func TimerLate(n int, d time.Duration) time.Duration {
	lates := make([]float64, n)
	for i := range lates {
		start := time.Now()
		t := time.NewTimer(d)
		<-t.C
		lates[i] = float64(time.Since(start) - d)
	}
	return time.Duration(stats.Describe(lates).P99)
}
