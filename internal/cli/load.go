package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/report"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/schedule"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/summary"
	"github.com/tokperf/tokperf/internal/telemetry"
	"github.com/tokperf/tokperf/internal/workload"
)

var errHelp = errors.New("help shown")

// ints is a comma-separated list of positive integers.
type ints []int

func (v *ints) String() string {
	var s []string
	for _, n := range *v {
		s = append(s, strconv.Itoa(n))
	}
	return strings.Join(s, ",")
}

func (v *ints) Set(s string) error {
	*v = nil
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a positive integer", part)
		}
		*v = append(*v, n)
	}
	return nil
}

// floats is a comma-separated list of positive numbers.
type floats []float64

func (v *floats) String() string {
	var s []string
	for _, n := range *v {
		s = append(s, strconv.FormatFloat(n, 'g', -1, 64))
	}
	return strings.Join(s, ",")
}

func (v *floats) Set(s string) error {
	*v = nil
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || !(n > 0) {
			return fmt.Errorf("%q is not a positive number", part)
		}
		*v = append(*v, n)
	}
	return nil
}

// waitReady is --wait-ready[=TIMEOUT]: alone it waits up to 10 minutes.
type waitReady time.Duration

func (w *waitReady) String() string { return time.Duration(*w).String() }

func (w *waitReady) IsBoolFlag() bool { return true }

func (w *waitReady) Set(s string) error {
	switch s {
	case "true":
		*w = waitReady(10 * time.Minute)
	case "false":
		*w = 0
	default:
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return fmt.Errorf("%q is not a positive duration", s)
		}
		*w = waitReady(d)
	}
	return nil
}

// loadFlags are the flags of run and sweep.
type loadFlags struct {
	wait                                                waitReady
	gpus                                                int
	gpuType                                             string
	untilSaturated                                      bool
	sloTTFT, sloTPOT, sloE2E                            time.Duration
	http2, netHTTP                                      bool
	keepText                                            bool
	maxConc                                             int
	sharedPrefix                                        int
	cachePrompt                                         bool
	engine                                              string
	url, endpoint, model, apiKey, out, profile, arrival string
	conc                                                ints
	rates                                               floats
	requests, inputTokens, outputTokens, warmup         int
	duration, timeout                                   time.Duration
	ignoreEOS                                           bool
	temperature                                         float64
	seed                                                int64
	concSet                                             bool
}

func (f *loadFlags) register(fs *flag.FlagSet, cmd string) {
	fs.StringVar(&f.url, "url", "", "server base URL, e.g. http://127.0.0.1:30000 (none: start the embedded simulator)")
	fs.StringVar(&f.endpoint, "endpoint", "", "generate (the engine's native raw endpoint), completions, chat, or api-chat (Ollama) (default: the raw generation endpoint)")
	fs.StringVar(&f.engine, "engine", "", "the server's engine when detection is wrong: sglang, vllm, tgi, llamacpp, ollama, openai")
	fs.Var(&f.wait, "wait-ready", "wait for a starting server: --wait-ready (up to 10m) or --wait-ready=TIMEOUT")
	fs.IntVar(&f.sharedPrefix, "shared-prefix", 0, "tokens every prompt shares at its start (0: each prompt unique, so no prefix cache flatters TTFT)")
	fs.BoolVar(&f.cachePrompt, "cache-prompt", false, "let llama.cpp reuse its prompt cache")
	if cmd == "sweep" {
		fs.BoolVar(&f.untilSaturated, "until-saturated", false, "keep doubling concurrency until aggregate grows less than 10% per doubling, then add a level between the last two")
		fs.IntVar(&f.maxConc, "max-concurrency", 1024, "the highest level --until-saturated tries")
	}
	fs.DurationVar(&f.sloTTFT, "slo-ttft", 0, "goodput counts requests whose TTFT is at most this")
	fs.DurationVar(&f.sloTPOT, "slo-tpot", 0, "goodput counts requests whose TPOT is at most this")
	fs.DurationVar(&f.sloE2E, "slo-e2e", 0, "goodput counts requests whose E2E latency is at most this")
	fs.BoolVar(&f.http2, "http2", false, "speak HTTP/2 (h2c to http:// URLs)")
	fs.BoolVar(&f.netHTTP, "net-http", false, "send HTTP/1.1 through Go's net/http instead of tokperf's own lean client (slower; to compare the two)")
	fs.IntVar(&f.gpus, "gpus", 0, "GPUs behind the server, recorded for per-GPU figures")
	fs.StringVar(&f.gpuType, "gpu-type", "", "GPU type behind the server, recorded for comparisons")
	fs.StringVar(&f.model, "model", "", "model name (default: the first of /v1/models)")
	fs.StringVar(&f.apiKey, "api-key", "", "API key (default $OPENAI_API_KEY; never written to any file)")
	fs.StringVar(&f.out, "out", "", "result file (default ./tokperf-results/TIMESTAMP-"+cmd+".jsonl)")
	fs.StringVar(&f.out, "o", "", "shorthand for --out")
	fs.StringVar(&f.profile, "sim-profile", "seed", "simulator profile when there is no --url (name or .yaml file)")
	fs.StringVar(&f.arrival, "arrival", "poisson", "open-loop arrivals: poisson or constant")
	def := "1"
	if cmd == "sweep" {
		def = "1,4,16,32"
	}
	f.conc.Set(def)
	fs.Var(&f.conc, "concurrency", "requests in flight, one stage per level (with --rate: a cap)")
	fs.Var(&f.conc, "c", "shorthand for --concurrency")
	fs.Var(&f.rates, "rate", "open loop: requests per second, one stage per rate (comma-separated)")
	fs.IntVar(&f.requests, "requests", 0, "measured requests per stage (default max(4, 2×C); open loop 60×rate)")
	fs.DurationVar(&f.duration, "duration", 0, "start requests for this long per stage instead of --requests")
	fs.IntVar(&f.inputTokens, "input-tokens", 128, "prompt length in tokens")
	fs.IntVar(&f.outputTokens, "output-tokens", 1000, "output tokens asked per request")
	fs.BoolVar(&f.ignoreEOS, "ignore-eos", true, "ask the server to generate every output token (--ignore-eos=false honours EOS)")
	fs.Float64Var(&f.temperature, "temperature", 0, "sampling temperature")
	fs.IntVar(&f.warmup, "warmup", -1, "warm-up requests per stage, excluded from figures (-1: one round at the stage's concurrency)")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Minute, "per-request timeout")
	fs.Int64Var(&f.seed, "seed", 1, "seed of the prompts and arrivals")
}

func parse(fs *flag.FlagSet, args []string, e *env) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(e.stdout)
			fmt.Fprintf(e.stdout, "Usage: tokperf %s [flags]\n\nFlags:\n", fs.Name())
			fs.PrintDefaults()
			return errHelp
		}
		return usagef("%v", err)
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q (flags start with -)", fs.Arg(0))
	}
	return nil
}

func (f *loadFlags) check(fs *flag.FlagSet) error {
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "c" || fl.Name == "concurrency" {
			f.concSet = true
		}
	})
	if f.url != "" {
		u, err := url.Parse(f.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("--url %q is not an http(s) URL with a host", f.url)
		}
	}
	switch f.endpoint {
	case "", "generate", "completions", "chat", "api-chat":
	default:
		return usagef("--endpoint %q: want generate, completions, chat or api-chat", f.endpoint)
	}
	switch f.engine {
	case "", "sglang", "vllm", "tgi", "llamacpp", "ollama", "openai":
	default:
		return usagef("--engine %q: want sglang, vllm, tgi, llamacpp, ollama or openai", f.engine)
	}
	if f.sharedPrefix < 0 || f.sharedPrefix >= f.inputTokens {
		if f.sharedPrefix != 0 {
			return usagef("--shared-prefix must be below --input-tokens")
		}
	}
	if _, err := schedule.Parse(f.arrival); err != nil {
		return usagef("--arrival: %v", err)
	}
	switch {
	case f.inputTokens < 1:
		return usagef("--input-tokens must be at least 1")
	case f.outputTokens < 1:
		return usagef("--output-tokens must be at least 1")
	case f.requests < 0:
		return usagef("--requests must not be negative")
	case f.duration < 0:
		return usagef("--duration must not be negative")
	case f.timeout <= 0:
		return usagef("--timeout must be positive")
	case f.sloTTFT < 0 || f.sloTPOT < 0 || f.sloE2E < 0:
		return usagef("SLOs must not be negative")
	case f.warmup < -1:
		return usagef("--warmup must be -1 (one round), 0 or more")
	case len(f.rates) > 0 && f.concSet && len(f.conc) != 1:
		return usagef("with --rate, -c is one cap on requests in flight, not a list")
	case f.untilSaturated && len(f.rates) > 0:
		return usagef("--until-saturated doubles concurrency: it does not mix with --rate")
	}
	return nil
}

// stages turns the flags into the run's stages.
func (f *loadFlags) stages() []runner.Stage {
	var out []runner.Stage
	if len(f.rates) > 0 {
		cap := 0
		if f.concSet {
			cap = f.conc[0]
		}
		for i, r := range f.rates {
			n := f.requests
			if n == 0 && f.duration == 0 {
				n = max(4, int(60*r))
			}
			out = append(out, runner.Stage{Index: i, Concurrency: cap, Rate: r, Arrival: schedule.Arrival(f.arrival),
				Requests: n, Duration: f.duration, Warmup: max(f.warmup, 0), Timeout: f.timeout, Seed: f.seed + int64(i)})
		}
		return out
	}
	for i, c := range f.conc {
		n := f.requests
		if n == 0 && f.duration == 0 {
			n = max(4, 2*c)
		}
		w := f.warmup
		if w < 0 {
			w = c
		}
		out = append(out, runner.Stage{Index: i, Concurrency: c, Requests: n, Duration: f.duration, Warmup: w, Timeout: f.timeout, Seed: f.seed})
	}
	return out
}

// load is tokperf run and tokperf sweep.
func load(ctx context.Context, cmd string, args []string, e *env) error {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	var f loadFlags
	f.register(fs, cmd)
	if err := parse(fs, args, e); err != nil {
		return err
	}
	if err := f.check(fs); err != nil {
		return err
	}
	if cmd == "run" && len(f.conc) > 1 && len(f.rates) == 0 {
		return usagef("run is one stage: give one -c level, or use sweep")
	}
	if cmd == "run" && len(f.rates) > 1 {
		return usagef("run is one stage: give one --rate, or use sweep")
	}
	stages := f.stages()
	maxConns := 1
	for _, s := range stages {
		maxConns = max(maxConns, s.Concurrency, int(s.Rate*4))
	}

	sess, err := connect(ctx, cmd, &f, e)
	if err != nil {
		return err
	}
	defer sess.close()
	setup := sess.setup
	b, err := sess.backend(ctx, setup.Endpoint, maxConns)
	if err != nil {
		return err
	}
	defer b.Close()
	setup.Route, setup.Client = b.Route(), b.Client()
	setup.Load = record.Load{Requests: f.requests, DurationS: f.duration.Seconds(), Warmup: f.warmup, TimeoutS: f.timeout.Seconds()}
	if len(f.rates) > 0 {
		setup.Load.Rate, setup.Load.Arrival = f.rates[0], f.arrival
		if f.concSet {
			setup.Load.Concurrency = f.conc
		}
	} else {
		setup.Load.Concurrency = f.conc
	}

	// GPU telemetry where nvidia-smi exists: one process for the run; its
	// first readings name the GPUs in the header.
	clock := record.NewClock()
	gpus := telemetry.WatchGPUs(ctx, clock)
	if gpus != nil {
		defer gpus.Stop()
		for deadline := time.Now().Add(time.Second); len(gpus.Samples()) == 0 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		// Detected GPUs describe a real server on this machine; a simulated
		// one keeps its profile's, and --gpus always wins.
		if st := telemetry.SummarizeGPUs(gpus.Samples(), 0, clock.Now()); st.GPUs > 0 && !setup.Simulated && f.gpus == 0 {
			setup.GPUs, setup.GPU = st.GPUs, st.Names[0]
		}
	}
	out, w, _, err := createAt(f.out, cmd, setup, clock)
	if err != nil {
		return err
	}
	var writeErr error
	wl := f.workload()
	r := &runner.Runner{
		Backend: b, Source: wl.Request, Clock: clock,
		Sink: func(rec record.Record) {
			if err := w.Write(rec); err != nil && writeErr == nil {
				writeErr = err
			}
		},
	}
	fmt.Fprintln(e.stderr, report.Describe(setup))
	var sums []summary.Stage
	var views []*analyze.ServerView
	names, scrape := telemetry.EngineNames[setup.Server.Engine], false
	if names.Generated != "" {
		_, err := telemetry.Scrape(ctx, sess.client, sess.base+"/metrics", names)
		scrape = err == nil
	}
	runStage := func(st runner.Stage) {
		label := fmt.Sprintf("C=%d", st.Concurrency)
		if st.Rate > 0 {
			label = fmt.Sprintf("rate=%g/s", st.Rate)
		}
		what := fmt.Sprintf("%d requests", st.Requests)
		if st.Requests == 0 {
			what = "requests for " + st.Duration.String()
		}
		fmt.Fprintf(e.stderr, "%s: %d warm-up, then %s ...\n", label, st.Warmup, what)
		var watch *telemetry.Watcher
		if scrape {
			watch = telemetry.Watch(ctx, sess.client, sess.base+"/metrics", names, clock, st.Index, time.Second)
		}
		stageStart := clock.Now()
		// The stage's figures are built as requests finish; the records
		// themselves live only in the result file.
		acc := summary.NewAcc(st.Concurrency, setup.SLO)
		acc.Grow(min(st.Requests, 1<<20)) // up to 72 MB ahead; beyond, it grows as it goes
		r.Each(ctx, st, acc.Add)
		s := acc.Stage()
		s.Index = st.Index
		sums = append(sums, s)
		if watch != nil {
			samples := watch.Stop()
			if err := w.WriteMetrics(samples); err != nil && writeErr == nil {
				writeErr = err
			}
			views = append(views, analyze.Server(s, acc, samples, names))
		}
		if gpus != nil {
			samples := gpus.Samples()
			var mine []telemetry.GPUSample
			for _, g := range samples {
				if g.At >= stageStart {
					mine = append(mine, g)
				}
			}
			if err := w.WriteGPU(st.Index, mine); err != nil && writeErr == nil {
				writeErr = err
			}
			views = append(views, analyze.GPUs(s, acc, samples))
		}
		fmt.Fprintf(e.stderr, "%s: %.1f tok/s aggregate, %d ok, %.1f s\n", label, s.AggregateTokS, s.OK, s.WallS)
	}
	for _, st := range stages {
		runStage(st)
		if ctx.Err() != nil {
			break
		}
	}
	// --until-saturated: double while aggregate grows 10% or more per
	// doubling, then fill in the level between the last two.
	for f.untilSaturated && ctx.Err() == nil && len(sums) >= 2 {
		a, b := sums[len(sums)-2], sums[len(sums)-1]
		if b.OK < b.Requests {
			fmt.Fprintf(e.stderr, "--until-saturated: stopping, requests failed at C=%d\n", b.Concurrency)
			break
		}
		if setup.SLO.Set() && float64(b.SLOMet) < 0.9*float64(b.OK) {
			fmt.Fprintf(e.stderr, "--until-saturated: stopping, only %d of %d requests met the SLO at C=%d\n", b.SLOMet, b.OK, b.Concurrency)
			break
		}
		if analyze.PerDoubling(a, b) < analyze.Saturation {
			if mid := int(math.Round(math.Sqrt(float64(a.Concurrency * b.Concurrency)))); mid > a.Concurrency && mid < b.Concurrency {
				runStage(f.levelStage(len(sums), mid))
			}
			break
		}
		if b.Concurrency*2 > f.maxConc {
			fmt.Fprintf(e.stderr, "--until-saturated: still rising at C=%d; --max-concurrency %d stops it\n", b.Concurrency, f.maxConc)
			break
		}
		runStage(f.levelStage(len(sums), b.Concurrency*2))
	}
	sort.SliceStable(sums, func(i, j int) bool {
		return sums[i].Rate == 0 && sums[j].Rate == 0 && sums[i].Concurrency < sums[j].Concurrency
	})
	interrupted := ctx.Err() != nil
	closeErr := w.Close(interrupted)
	fmt.Fprintln(e.stdout)
	printReport(e.stdout, setup, sums, views, len(f.rates) > 0)
	fmt.Fprintf(e.stdout, "results: %s\n", out)
	switch {
	case writeErr != nil:
		return writeErr
	case closeErr != nil:
		return closeErr
	case interrupted:
		return errInterrupted
	}
	return nil
}

// levelStage is one more closed-loop level with the run's settings.
func (f *loadFlags) levelStage(index, c int) runner.Stage {
	st := runner.Stage{Index: index, Concurrency: c, Requests: max(4, 2*c), Duration: f.duration, Warmup: c, Timeout: f.timeout, Seed: f.seed}
	if f.requests > 0 || f.duration > 0 {
		st.Requests = f.requests
	}
	if f.warmup >= 0 {
		st.Warmup = f.warmup
	}
	return st
}

// session is a connection to the target: the embedded simulator started
// when there is no --url, the server detected, the setup so far.
type session struct {
	f       *loadFlags
	e       *env
	base    string
	setup   record.Setup
	client  *http.Client
	cleanup []func()
}

func (s *session) close() {
	s.client.CloseIdleConnections()
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
}

// connect starts the embedded simulator if there is no --url, waits for a
// starting server if asked, detects the engine and picks model and endpoint.
func connect(ctx context.Context, cmd string, f *loadFlags, e *env) (*session, error) {
	if f.apiKey == "" {
		f.apiKey = e.getenv("OPENAI_API_KEY")
	}
	s := &session{f: f, e: e, base: f.url, setup: record.Setup{Command: cmd, URL: backend.Redact(f.url)}}
	s.client = backend.NewClient(8, e.dial)
	if s.base == "" {
		p, err := sim.LoadProfile(f.profile)
		if err != nil {
			return nil, usagef("--sim-profile: %v", err)
		}
		ln, err := e.listen("127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("starting the embedded simulator: %w", err)
		}
		srv := sim.New(p, sim.Options{NoTrace: true})
		sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		done := make(chan struct{})
		go func() { defer close(done); srv.Serve(sctx, ln) }()
		s.cleanup = append(s.cleanup, func() { stop(); <-done })
		s.base = "http://" + ln.Addr().String()
		s.setup.URL, s.setup.Simulated, s.setup.Profile, s.setup.GPUs, s.setup.GPU = s.base, true, p.Name, p.GPUs, p.GPU
		fmt.Fprintf(e.stderr, "no --url: started the embedded simulator at %s (profile %s: %s); figures are simulated, not a real server's\n", s.base, p.Name, p.Description)
	}
	fail := func(err error) (*session, error) {
		s.close()
		return nil, err
	}
	if f.wait > 0 {
		took, err := backend.WaitReady(ctx, s.client, s.base, f.apiKey, time.Duration(f.wait))
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(e.stderr, "server answered /health and /v1/models after %.1f s\n", took.Seconds())
	}
	server, models, err := backend.Detect(ctx, s.client, s.base, f.apiKey)
	if err != nil {
		return fail(err)
	}
	if f.engine != "" && f.engine != server.Engine {
		fmt.Fprintf(e.stderr, "--engine %s overrides the detected %q\n", f.engine, server.Engine)
		server.Engine = f.engine
	}
	s.setup.Server = server
	s.setup.Model = f.model
	if s.setup.Model == "" {
		if len(models) == 0 {
			return fail(fmt.Errorf("%s lists no model at /v1/models: give --model", s.setup.URL))
		}
		s.setup.Model = models[0]
	}
	s.setup.Endpoint = f.endpoint
	if s.setup.Endpoint == "" {
		s.setup.Endpoint = backend.DefaultEndpoint(server.Engine)
	}
	s.setup.Workload = record.Workload{InputTokens: f.inputTokens, OutputTokens: f.outputTokens, IgnoreEOS: f.ignoreEOS, Seed: f.seed, SharedPrefix: f.sharedPrefix}
	s.setup.Sampling = record.Sampling{Temperature: f.temperature}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	s.setup.SLO = record.SLO{TTFTMs: ms(f.sloTTFT), TPOTMs: ms(f.sloTPOT), E2EMs: ms(f.sloE2E)}
	if f.gpus > 0 {
		s.setup.GPUs = f.gpus
	}
	if f.gpuType != "" {
		s.setup.GPU = f.gpuType
	}
	return s, nil
}

// backend makes a backend for an endpoint of the session's server; with
// --wait-ready it also waits for a first 1-token generation to succeed.
func (s *session) backend(ctx context.Context, endpoint string, conns int) (*backend.Backend, error) {
	b, err := backend.New(backend.Config{URL: s.base, Endpoint: endpoint, Engine: s.setup.Server.Engine, Model: s.setup.Model,
		APIKey: s.f.apiKey, Conns: conns, Dial: s.e.dial, CachePrompt: s.f.cachePrompt, HTTP2: s.f.http2, NetHTTP: s.f.netHTTP, KeepText: s.f.keepText})
	if err != nil {
		return nil, usagef("%v", err)
	}
	if s.f.wait > 0 {
		took, err := firstGeneration(ctx, b, time.Duration(s.f.wait))
		if err != nil {
			b.Close()
			return nil, err
		}
		fmt.Fprintf(s.e.stderr, "first 1-token generation on %s ok after %.1f s more\n", b.Route(), took.Seconds())
	}
	return b, nil
}

func (f *loadFlags) workload() workload.Synthetic {
	return workload.Synthetic{InputTokens: f.inputTokens, OutputTokens: f.outputTokens, IgnoreEOS: f.ignoreEOS, Temperature: f.temperature, Seed: f.seed, SharedPrefix: f.sharedPrefix}
}

// create opens the result file (default under ./tokperf-results/) and
// starts the run's clock.
func create(out, cmd string, setup record.Setup) (string, *results.Writer, record.Clock, error) {
	return createAt(out, cmd, setup, record.NewClock())
}

// createAt is create with a clock the caller already started.
func createAt(out, cmd string, setup record.Setup, clock record.Clock) (string, *results.Writer, record.Clock, error) {
	if out == "" {
		out = filepath.Join("tokperf-results", time.Now().Format("20060102-150405")+"-"+cmd+".jsonl")
	}
	w, err := results.Create(out, results.Header{
		Tool: "tokperf", Version: Version, Created: time.Now().UTC(), StartUnixNs: clock.Start().UnixNano(),
		Setup: setup, Machine: machine(),
	})
	return out, w, clock, err
}

// firstGeneration retries a 1-token request until one succeeds: the last
// step of --wait-ready, since a server can answer /health before it generates.
func firstGeneration(ctx context.Context, b *backend.Backend, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	clock := record.NewClock()
	var last string
	for time.Since(start) < timeout {
		rec := record.New(-1)
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		b.Do(rctx, clock, record.Request{Prompt: "ready?", MaxTokens: 1}, &rec)
		cancel()
		if rec.OK() {
			return time.Since(start), nil
		}
		last = rec.Error
		if ctx.Err() != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	return time.Since(start), fmt.Errorf("no 1-token generation succeeded within %v (last: %s)", timeout, last)
}

func printReport(w io.Writer, setup record.Setup, sums []summary.Stage, views []*analyze.ServerView, openLoop bool) {
	var notes []string
	for _, v := range views {
		if v != nil {
			notes = append(notes, v.Line)
		}
	}
	report.Text(w, setup, sums, notes, warningsFor(setup, sums, views, openLoop), verdictFor(sums, openLoop))
}

// warningsFor runs every check on a run's stages.
func warningsFor(setup record.Setup, sums []summary.Stage, views []*analyze.ServerView, openLoop bool) []analyze.Warning {
	warnings := analyze.Warnings(sums, analyze.Context{OutputTokens: setup.Workload.OutputTokens, IgnoreEOS: setup.Workload.IgnoreEOS, OpenLoop: openLoop, Simulated: setup.Simulated})
	for _, v := range views {
		if v != nil {
			warnings = append(warnings, v.Warnings...)
		}
	}
	return warnings
}

// verdictFor is the scaling verdict of a closed-loop sweep, nil otherwise.
func verdictFor(sums []summary.Stage, openLoop bool) *analyze.Verdict {
	if openLoop || len(sums) < 2 {
		return nil
	}
	v := analyze.Scaling(sums)
	return &v
}

func machine() record.Machine {
	host, _ := os.Hostname()
	return record.Machine{Hostname: host, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
}
