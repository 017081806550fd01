package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/schedule"
	"github.com/tokperf/tokperf/internal/shard"
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
	Warmup       int           // per stage; -1: one round at the stage's concurrency, -K: K rounds
	Timeout      time.Duration // per request
	Seed         int64
	// UntilSaturated keeps doubling concurrency while aggregate grows 10%
	// or more per doubling (up to MaxConcurrency), then measures the level
	// between the last two.
	UntilSaturated bool
	MaxConcurrency int
	// UntilSLO, when set, searches for the most concurrent agent
	// sessions whose per-turn TTFT and TPOT p99 meet its limits: levels
	// doubling from the first while they pass, then bisecting (up to
	// MaxConcurrency); analyze.Capacity judges each.
	UntilSLO record.SLO
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
	} else if l.UntilSLO.Set() {
		// A level's p99 needs all its sessions: no stage time cuts it.
		st.Requests, st.Duration = CapacitySessions(c), 0
	}
	if l.Warmup >= 0 {
		st.Warmup = l.Warmup
	} else {
		st.Warmup = -l.Warmup * c // rounds at the stage's concurrency
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
	out.UntilSLO = l.UntilSLO
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
	Shard *shard.Config
	// Live, when set, serves the run's own client-side metrics while it
	// goes on (--live prometheus=ADDR), until the run ends.
	Live *Output
	// Preset, when set, is the published test shape the flags came from,
	// for the header.
	Preset *record.Preset
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
	if cfg.Shard != nil {
		if err := cfg.CheckShard(); err != nil {
			return nil, err
		}
		plans, shares = cfg.Shard.Plans(plans)
	}
	s, err := startSweep(ctx, cfg, env, plans, shares)
	if err != nil {
		return nil, err
	}
	defer s.close()
	for _, p := range plans {
		s.stage(ctx, p)
		if ctx.Err() != nil || s.gone != nil || s.barErr != nil || s.virtErr != nil {
			break
		}
	}
	if cfg.Load.UntilSaturated {
		s.saturate(ctx)
	}
	if cfg.Load.UntilSLO.Set() {
		s.searchCapacity(ctx)
	}
	return s.finish(ctx)
}

// sweep is what a sweep's stages share: the session and its backend, the
// setup (written once, in the result file's header), the clock, the file,
// the fold, the telemetry and a shard's barrier; and what the stages so
// far have found.
type sweep struct {
	cfg       SweepConfig
	env       *Env
	progress  io.Writer
	sess      *Session
	serverTok *backend.ServerTokenizer // --tokenizer server, or nil
	b         *backend.Backend
	setup     record.Setup
	clock     record.Clock
	gpus      *telemetry.GPUWatcher // nil without GPU readings
	shares    []record.ShardStage   // a shard's share of each stage
	bar       *shard.Barrier        // a shard's, or nil
	out       string                // the result file's name
	file      *sink
	fold      *analyze.Fold
	feed      *twinFeed
	output    output // --live, or nil
	r         *runner.Runner
	names     engine.Metrics
	scrape    bool           // the server's /metrics answered
	virt      *virtualStages // --virtual, or nil
	virtErr   error          // a request virtual time refused: the run stops
	cleanup   []func()

	figures []summary.Stage // each whole stage's, for --until-saturated
	gone    error           // the server stopped answering
	barErr  error           // a shard's barrier failed: the run stops
}

// startSweep connects to the target and readies what every stage shares,
// its pool sized for the plans' requests in flight.
func startSweep(ctx context.Context, cfg SweepConfig, env *Env, plans []runner.Plan, shares []record.ShardStage) (*sweep, error) {
	if cfg.Target.Virtual {
		if err := checkVirtual(cfg); err != nil {
			return nil, err
		}
	}
	conns := 1
	for _, p := range plans {
		conns = max(conns, p.Concurrency, int(p.Rate*4))
	}
	sess, err := Connect(ctx, cfg.Command, cfg.Target, env)
	if err != nil {
		return nil, err
	}
	s := &sweep{cfg: cfg, env: env, progress: env.progress(), sess: sess, setup: sess.Setup, shares: shares, cleanup: []func(){sess.Close}}
	if err := s.start(ctx, conns); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// start readies the sweep, step by step: the prompts, the setup, the
// backend, the GPU watcher, the shard's clock and barrier, the result file.
func (s *sweep) start(ctx context.Context, conns int) error {
	if err := s.serverPrompts(ctx); err != nil {
		return err
	}
	s.setup.Workload = workloadSetup(s.cfg)
	s.setup.Sampling = record.Sampling{Temperature: s.cfg.Workload.Temperature}
	s.setup.SLO = s.cfg.SLO
	s.setup.Preset = s.cfg.Preset
	s.setup.Virtual = s.cfg.Target.Virtual
	s.cachePrompt()
	if err := s.connect(ctx, conns); err != nil {
		return err
	}
	// GPU telemetry from a DCGM exporter (--gpu-metrics) or where
	// nvidia-smi exists: one watcher for the run; its first readings name
	// the GPUs in the header.
	s.clock = record.NewClock()
	if s.setup.Virtual {
		// Virtual time has no GPUs and no /metrics to read.
		if err := s.open(ctx); err != nil {
			return err
		}
		s.scrape = false
		s.virt = &virtualStages{v: s.sess.sim.Virtual(), r: s.r, chat: slices.Contains([]string{"chat", "responses", "messages"}, s.setup.Endpoint)}
		return nil
	}
	if err := s.watchGPUs(ctx); err != nil {
		return err
	}
	if s.cfg.Shard != nil {
		s.setup.Shard, s.bar = startShard(ctx, s.cfg.Shard, s.sess, s.shares, s.progress)
	}
	return s.open(ctx)
}

// close stops what the sweep started, last first.
func (s *sweep) close() {
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
}

// serverPrompts builds the prompts counted by the server's own tokenizer
// (--tokenizer server), when asked.
func (s *sweep) serverPrompts(ctx context.Context) error {
	if s.cfg.ServerPrompts == nil {
		return nil
	}
	tok, err := backend.NewServerTokenizer(ctx, s.sess.client, s.sess.base, s.setup.Server.Engine, s.setup.Model, s.sess.t.APIKey)
	if err != nil {
		return &ConfigError{err}
	}
	s.serverTok = tok
	if s.cfg.Prompts, err = s.cfg.ServerPrompts(tok); err != nil {
		return err
	}
	p := s.cfg.Prompts
	s.cleanup = append(s.cleanup, func() { p.Close() })
	return nil
}

// workloadSetup is the header's record of what the requests ask for.
func workloadSetup(cfg SweepConfig) record.Workload {
	w := cfg.Workload
	out := record.Workload{InputTokens: w.InputTokens, OutputTokens: w.OutputTokens, IgnoreEOS: w.IgnoreEOS, Seed: w.Seed, SharedPrefix: w.SharedPrefix, PrefixGroups: w.PrefixGroups}
	p := cfg.Prompts
	if p == nil {
		return out
	}
	info := p.Info()
	out.Prompts, out.Tokenizer = info.String(), info.Tokenizer
	if _, fixed := p.Input(); !fixed {
		out.Input = info.Input
	}
	if _, fixed := p.Output(); !fixed {
		out.Output = info.Output
	}
	out.Reuse = info.Source == "trace" || info.Conversations
	out.Conversations, out.Turns, out.OwnAnswers = info.Conversations, info.Turns, info.OwnAnswers
	out.Agent, out.CacheCeiling = info.Agent, info.Ceiling
	if info.Source == "agent trace" {
		out.Input, out.Output, out.InputTokens, out.OutputTokens = "agent trace", "agent trace", 0, 0
	}
	if info.Conversations {
		out.ThinkS = cfg.Load.Think.Seconds()
	}
	if info.Source == "trace" {
		out.Input, out.Output, out.InputTokens, out.OutputTokens = "trace", "trace", 0, 0
	}
	if info.Source == "dataset" {
		// The file's prompts and, where it gives them, its lengths.
		out.Input, out.InputTokens = "dataset", 0
		out.DistinctPrompts, out.PromptLengths, out.OutputLengths = info.Distinct, info.PromptLengths, info.OutputLengths
		if info.Output == "" || info.FileOutputs > 0 {
			// Requests ask for the file's lengths, not --output-tokens.
			out.Output = "dataset"
		}
	}
	return out
}

// cachePrompt is whether llama.cpp may reuse its prompt cache, and why.
func (s *sweep) cachePrompt() {
	if e, _ := engine.Lookup(s.setup.Server.Engine); !e.PromptCache {
		return
	}
	if p := s.cfg.Prompts; p != nil && p.Conversational() && !s.sess.t.CachePromptSet {
		s.sess.t.CachePrompt = true // conversations exist to measure the cache
		s.setup.CachePrompt = "conversations"
	} else if s.sess.t.CachePrompt {
		s.setup.CachePrompt = "asked"
	}
}

// connect makes the backend, its pool sized for conns requests in flight,
// and records how it speaks to the server and what load it will send.
func (s *sweep) connect(ctx context.Context, conns int) error {
	b, err := s.sess.Backend(ctx, s.setup.Endpoint, conns)
	if err != nil {
		return err
	}
	s.b = b
	s.cleanup = append(s.cleanup, b.Close)
	s.setup.Route, s.setup.Client = b.Route(), b.Client()
	if s.setup.TLS, err = b.Negotiated(ctx); err != nil {
		return err
	}
	if s.cfg.Target.UsageFinal {
		s.setup.Usage = "final"
	}
	s.setup.Load = s.cfg.Load.record()
	if len(s.cfg.Load.Rates) > 0 || s.cfg.Load.Trace != nil {
		// An open loop's sends are as punctual as this machine's timers:
		// lateness counts only past their own oversleep.
		late := TimerLate(100, 500*time.Microsecond)
		s.setup.Load.TimerLateP99Ms = record.Ms(late)
		fmt.Fprintf(s.progress, "timers here wake %.2f ms late (p99): an open-loop send is late past %.2f ms\n", record.Ms(late), record.Ms(late+summary.LateThreshold))
	}
	return nil
}

// watchGPUs starts the run's GPU watcher, where there is one, and names
// the GPUs in the setup from its first readings.
func (s *sweep) watchGPUs(ctx context.Context) error {
	gpus, err := s.sess.watchGPUs(ctx, s.clock)
	if err != nil || gpus == nil {
		return err
	}
	s.gpus = gpus
	s.cleanup = append(s.cleanup, gpus.Stop)
	for deadline := time.Now().Add(time.Second); len(gpus.Samples()) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	// Detected GPUs describe a real server (on this machine, or behind
	// the exporter); a simulated one keeps its profile's unless its
	// exporter was asked for, and --gpus always wins.
	t := s.cfg.Target
	if st := analyze.SummarizeGPUs(gpus.Samples(), 0, s.clock.Now()); st.GPUs > 0 && (!s.setup.Simulated || t.GPUMetrics != "") && t.GPUs == 0 {
		s.setup.GPUs, s.setup.GPU = st.GPUs, st.Names[0]
	}
	s.setup.GPUMetrics = s.sess.gpuMetrics()
	return nil
}

// open creates the result file with the setup in its header, the fold
// and the runner the stages share, and tells the caller the setup.
func (s *sweep) open(ctx context.Context) error {
	// Listening first: an address in use leaves no empty result file.
	o, err := startOutput(s.cfg.Live, s.env)
	if err != nil {
		return &ConfigError{err}
	}
	if o != nil {
		s.output = o
		s.cleanup = append(s.cleanup, o.close)
	}
	out, w, err := create(s.cfg.Out, s.cfg.Command, s.setup, s.clock, s.env.force(), s.cfg.Stdout)
	if err != nil {
		return err
	}
	s.out, s.file = out, &sink{w: w, warn: s.env.progress()}
	s.fold = analyze.NewFold(s.setup, out)
	s.feed = newTwinFeed(s.setup)
	source := s.cfg.Workload.Request
	if p := s.cfg.Prompts; p != nil {
		source = p.Request
	}
	s.r = &runner.Runner{Backend: s.b, Source: source, Clock: s.clock, Sink: s.file.write}
	if s.output != nil {
		s.r.Backend = counted{s.b, s.output.inFlight()}
	}
	if s.bar != nil {
		s.r.Shard, s.r.Shards = s.cfg.Shard.Index, s.cfg.Shard.Count
		s.r.Gate = s.gate
	}
	if p := s.cfg.Prompts; p != nil && p.Conversational() {
		s.r.Conversations = p
		if a, ok := p.Sessions(); ok {
			s.r.Conversations = a
		}
	}
	s.env.started(s.setup)
	s.names = engine.MetricNames(s.setup.Server.Engine)
	if s.names.Generated != "" {
		_, err := telemetry.Scrape(ctx, s.sess.client, backend.Under(s.sess.base, "/metrics"), s.names)
		s.scrape = err == nil
	}
	return nil
}

// gate is the runner's gate of a shard's stage p: the barrier, whose
// failure (not an interrupt) stops the run.
func (s *sweep) gate(ctx context.Context, p runner.Plan) error {
	err := gate(ctx, s.bar, p.Index, s.clock, s.file)
	if ctx.Err() == nil {
		s.barErr = err // an interrupt is no barrier's failure
	}
	return err
}

// saturate is --until-saturated: it adds levels after the sweep's while
// nextLevel asks for one.
func (s *sweep) saturate(ctx context.Context) {
	for ctx.Err() == nil && s.gone == nil && s.virtErr == nil && len(s.figures) >= 2 {
		next, last, why := nextLevel(s.figures, s.cfg.Load, s.setup.SLO, s.fold.Run().RunningCap())
		if why != "" {
			fmt.Fprintf(s.progress, "--until-saturated: %s\n", why)
		}
		if next == 0 {
			return
		}
		if msg := s.feed.foretell(s.fold.Run(), next); msg != "" {
			fmt.Fprintf(s.progress, "--until-saturated: %s\n", msg)
		}
		s.stage(ctx, s.cfg.Load.level(len(s.figures), next))
		if last {
			return
		}
	}
}

// finish ends the result file and returns the run's model, with the error
// that stopped the run early, if one did.
func (s *sweep) finish(ctx context.Context) (*analyze.Run, error) {
	interrupted := ctx.Err() != nil
	s.fold.Integrity(false, true, interrupted)
	if err := s.file.close(interrupted); err != nil {
		return nil, err
	}
	if s.barErr != nil {
		return s.fold.Run(), fmt.Errorf("%s stopped: %w", s.cfg.Shard.Label(), s.barErr)
	}
	if s.serverTok != nil && s.serverTok.Err() != nil {
		return s.fold.Run(), fmt.Errorf("the server's tokenizer failed during the run, so some prompt lengths are wrong: %w", s.serverTok.Err())
	}
	fold := s.fold
	if s.cfg.Load.Slice > 0 {
		// A sliced run kept no stage's requests: its model is the file's,
		// read back as report does.
		var err error
		if fold, err = readFold(context.WithoutCancel(ctx), s.out); err != nil {
			return nil, err
		}
	}
	if s.virtErr != nil {
		return fold.Run(), s.virtErr
	}
	if s.gone != nil {
		// What finished is kept and returned; the run stops here.
		return fold.Run(), fmt.Errorf("stopped early, %s is not answering: %w", s.setup.URL, s.gone)
	}
	run := fold.Run()
	if !interrupted {
		s.feed.attach(run)
	}
	return run, nil
}

// nextLevel is --until-saturated's next concurrency after the levels so
// far: double while aggregate grows 10% or more per doubling; once it does
// not, the level between the last two, which is the last. A server's
// running cap cp (stated, or shown by its /metrics) ends the search: the
// doubling stops at the cap, and a level past it runs the cap itself, if
// not yet measured, as the last. 0 stops, with a reason to print where
// there is one.
func nextLevel(levels []summary.Stage, l Load, slo record.SLO, cp analyze.Cap) (next int, last bool, why string) {
	a, b := levels[len(levels)-2], levels[len(levels)-1]
	capped := fmt.Sprintf("the server runs at most %d requests (%s): a level past it only queues", cp.N, cp.From)
	switch {
	case b.OK < b.Requests:
		return 0, true, fmt.Sprintf("stopping, requests failed at C=%d", b.Concurrency)
	case slo.Set() && float64(b.SLOMet) < 0.9*float64(b.OK):
		return 0, true, fmt.Sprintf("stopping, only %d of %s met the SLO at C=%d", b.SLOMet, record.Plural(b.OK, "request"), b.Concurrency)
	case cp.N > 0 && b.Concurrency >= cp.N:
		if !slices.ContainsFunc(levels, func(s summary.Stage) bool { return s.Concurrency == cp.N }) {
			return cp.N, true, fmt.Sprintf("C=%d, the cap, last: %s", cp.N, capped)
		}
		return 0, true, fmt.Sprintf("stopping at C=%d: %s", b.Concurrency, capped)
	case analyze.PerDoubling(a, b) < analyze.Saturation:
		if mid := int(math.Round(math.Sqrt(float64(a.Concurrency * b.Concurrency)))); mid > a.Concurrency && mid < b.Concurrency {
			return mid, true, ""
		}
		return 0, true, ""
	case cp.N > 0 && b.Concurrency*2 >= cp.N:
		return cp.N, true, fmt.Sprintf("C=%d, the cap, last: %s", cp.N, capped)
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
