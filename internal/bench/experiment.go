package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/check"
	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/experiment"
	"github.com/tokperf/tokperf/internal/foreign"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
)

// The defaults of a sweep and a check, shared by the command line and
// experiments.
const (
	DefaultInputTokens  = 128
	DefaultOutputTokens = 256
	DefaultTimeout      = 10 * time.Minute
	DefaultCheckConc    = 4
	DefaultMaxTokens    = 48
)

// DefaultLoad is a sweep's load before any flag.
func DefaultLoad(levels []int) Load {
	return Load{Concurrency: levels, Arrival: "poisson", Warmup: -1, Timeout: DefaultTimeout, Seed: 1, MaxConcurrency: 1024}
}

// Experiment takes each configuration of f from start to stop: start its
// command, wait until it is ready (health, models and a first generation),
// check it answers correctly, sweep it, stop its process group and free its
// port; then compares those that passed. Logs and result files go to dir.
func Experiment(ctx context.Context, f *experiment.File, dir string, env *Env) (*analyze.Experiment, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	res := &analyze.Experiment{Schema: analyze.ExperimentSchema, ChecksSkipped: f.Check.Skip}
	rounds := 1
	if f.Restart {
		rounds = f.Repeat // A B A B …, each on a fresh server
	}
	byConfig := make([][]analyze.ExperimentConfig, len(f.Configs))
	for r := range rounds {
		for i, c := range f.Configs {
			if ctx.Err() != nil {
				break
			}
			if rounds > 1 {
				fmt.Fprintf(env.progress(), "== %s (repeat %d of %d)\n", c.Name, r+1, rounds)
			} else {
				fmt.Fprintf(env.progress(), "== %s\n", c.Name)
			}
			o := runConfig(ctx, f, c, dir, r, env)
			if !o.OK && o.Log != "" {
				o.LogTail = experiment.Tail(o.Log, 8)
			}
			byConfig[i] = append(byConfig[i], o)
		}
	}
	for _, outs := range byConfig {
		if len(outs) == 0 {
			continue
		}
		o := outs[0]
		if len(outs) > 1 {
			o = joinRepeats(ctx, outs)
		}
		res.Configs = append(res.Configs, o)
	}
	res.CompareConfigs(f.Sweep.Concurrency)
	return res, nil
}

// joinRepeats is one configuration's outcome over its restarted repeats:
// ok when every repeat was, its run the repeats' files folded as repeats
// of one run.
func joinRepeats(ctx context.Context, outs []analyze.ExperimentConfig) analyze.ExperimentConfig {
	o := outs[len(outs)-1]
	var files, reasons []string
	for i, r := range outs {
		if !r.OK {
			reasons = append(reasons, fmt.Sprintf("repeat %d: %s", i+1, r.Reason))
			continue
		}
		files = append(files, r.Result)
	}
	o.Result = strings.Join(files, ", ")
	o.OK, o.Reason, o.Run = false, strings.Join(reasons, "; "), nil
	if len(reasons) > 0 {
		return o
	}
	run, err := ReadRepeats(ctx, files, true)
	if err != nil {
		o.Reason = err.Error()
		return o
	}
	o.Run, o.OK = run, true
	return o
}

// ReadRepeats folds result files of the same sweep, one per repeat, into
// one run whose stages are their repeats: file k's stage i becomes repeat
// k of level i.
func ReadRepeats(ctx context.Context, paths []string, samples bool) (*analyze.Run, error) {
	var fold *analyze.Fold
	levels := 0
	for k, path := range paths {
		r, f, err := results.Open(path)
		if err != nil {
			return nil, err
		}
		most := 0
		for r.Next() {
			if fold == nil {
				setup := r.Header().Setup
				setup.Load.Repeat = len(paths)
				fold = analyze.NewFold(setup, paths[0])
				if samples {
					fold.KeepSamples()
				}
			}
			rec := r.Record()
			most = max(most, rec.Stage+1)
			if k == 0 {
				levels = most
			}
			rec.Stage, rec.Repeat = rec.Stage+k*levels, k
			fold.Add(&rec)
		}
		f.Close()
		if err := r.Err(); err != nil {
			return nil, err
		}
		if fold == nil {
			return nil, fmt.Errorf("%s: no requests", path)
		}
		if most > levels {
			return nil, fmt.Errorf("%s has %d stages, the first repeat %d: not repeats of one sweep", path, most, levels)
		}
		ms, gs := r.Metrics(), r.GPU()
		for i := range ms {
			ms[i].Stage += k * levels
		}
		for i := range gs {
			gs[i].Stage += k * levels
		}
		fold.Metrics(ms)
		fold.GPU(gs)
	}
	fold.Integrity(false, true, false)
	return fold.Run(), nil
}

// runConfig takes one configuration from start to stop; whatever happens,
// its process group is stopped and its port freed before it returns.
func runConfig(ctx context.Context, f *experiment.File, c experiment.Config, dir string, repeat int, env *Env) (o analyze.ExperimentConfig) {
	o = analyze.ExperimentConfig{Name: c.Name}
	progress := env.progress()
	baseline, gpus := experiment.GPUMemory()
	p, err := experiment.Start(c, dir)
	if err != nil {
		o.Reason = err.Error()
		return o
	}
	o.Log = p.Log
	defer func() {
		o.StoppedS = p.Stop(time.Duration(c.GraceS * float64(time.Second))).Seconds()
		if err := experiment.PortFree(c.URL, 30*time.Second); err != nil {
			o.Reason += "; " + err.Error()
		}
		if gpus {
			took, err := experiment.WaitGPUFree(baseline, time.Minute)
			if err != nil {
				o.Reason += "; " + err.Error()
			} else {
				o.Released = fmt.Sprintf("GPU memory released after %.1f s", took.Seconds())
			}
		}
	}()
	timeout := time.Duration(c.ReadyTimeoutS * float64(time.Second))
	// Ready: /health and /v1/models answer, unless the process ends first.
	rctx, cancel := context.WithTimeout(ctx, timeout)
	go func() {
		select {
		case <-p.Done():
			cancel()
		case <-rctx.Done():
		}
	}()
	took, err := backend.WaitReady(rctx, backend.NewClient(2, nil), c.URL, "", timeout)
	cancel()
	if exited, how := p.Exited(); exited {
		o.Reason = "exited at start: " + how
		return o
	}
	if err != nil {
		o.Reason = fmt.Sprintf("not ready after %.0f s", c.ReadyTimeoutS)
		return o
	}
	// Answering /health is not generating: wait for one 1-token generation
	// too, as --wait-ready does.
	if server, models, err := backend.Detect(ctx, backend.NewClient(2, nil), c.URL, ""); err == nil {
		model := ""
		if len(models) > 0 {
			model = models[0]
		}
		b, err := backend.New(backend.Config{URL: c.URL, Endpoint: engine.DefaultEndpoint(server.Engine), Engine: server.Engine, Model: model})
		if err == nil {
			more, err := FirstGeneration(ctx, b, timeout)
			b.Close()
			if err != nil {
				o.Reason = "answered /health but never generated: " + oneLine(err)
				return o
			}
			took += more
		}
	}
	fmt.Fprintf(progress, "ready after %.1f s (health, models and a first generation)\n", took.Seconds())
	quiet := &Env{Getenv: env.getenv, Listen: env.Listen, Dial: env.Dial}
	if !f.Check.Skip {
		res, err := Check(ctx, CheckConfig{Target: Target{URL: c.URL}, Items: check.Items(1, f.Check.Questions), Concurrency: DefaultCheckConc,
			MaxTokens: DefaultMaxTokens, MinAccuracy: f.Check.MinAccuracy, Seed: 1, Out: filepath.Join(dir, safeName(c.Name)+"-check.jsonl")}, quiet)
		if err != nil {
			o.Reason = "check: " + oneLine(err)
			return o
		}
		o.Check = res
		if a := res.Accuracy; a != nil {
			fmt.Fprintf(progress, "accuracy %d of %d = %.1f%% (the threshold is %.0f%%)\n", a.Right, a.Total, 100*a.Share, 100*a.Threshold)
		}
		for _, line := range res.Failures {
			fmt.Fprintln(progress, "FAIL "+line)
		}
		if !res.Passed {
			o.Reason = "failed its correctness checks"
			return o
		}
	}
	o.Result = filepath.Join(dir, safeName(c.Name)+".jsonl")
	s := f.Sweep
	cfg := SweepConfig{Command: "sweep", Target: Target{URL: c.URL, Endpoint: s.Endpoint}, Load: DefaultLoad(s.Concurrency), Out: o.Result}
	if f.Restart {
		o.Result = filepath.Join(dir, fmt.Sprintf("%s-r%d.jsonl", safeName(c.Name), repeat+1))
		cfg.Out = o.Result
		cfg.Load.Seed += int64(repeat) * 7919
	} else {
		cfg.Load.Repeat = f.Repeat
	}
	cfg.Workload.InputTokens, cfg.Workload.OutputTokens, cfg.Workload.IgnoreEOS, cfg.Workload.Seed = DefaultInputTokens, DefaultOutputTokens, true, 1
	if s.Requests > 0 {
		cfg.Load.Requests = s.Requests
	}
	if s.MaxStageS > 0 {
		cfg.Load.MaxStageTime = time.Duration(s.MaxStageS * float64(time.Second))
	}
	if s.InputTokens > 0 {
		cfg.Workload.InputTokens = s.InputTokens
	}
	if s.OutputTokens > 0 {
		cfg.Workload.OutputTokens = s.OutputTokens
	}
	if s.IgnoreEOS != nil {
		cfg.Workload.IgnoreEOS = *s.IgnoreEOS
	}
	_, err = Sweep(ctx, cfg, quiet)
	// The run is read back from its file with its samples, for the A/B.
	run, rerr := ReadRun(ctx, o.Result, true)
	failures := 0
	if run != nil {
		for _, st := range run.Stages {
			failures += st.Requests - st.OK - st.Cancelled
		}
	}
	if failures > 0 {
		// Requests failed: give a dying server a moment to finish dying.
		select {
		case <-p.Done():
		case <-time.After(2 * time.Second):
		}
	}
	if exited, how := p.Exited(); exited {
		o.Reason = fmt.Sprintf("died mid-sweep (%d requests failed): %s", failures, how)
		return o
	}
	if err != nil {
		o.Reason = "sweep: " + oneLine(err)
		return o
	}
	if rerr != nil {
		o.Reason = rerr.Error()
		return o
	}
	o.Run, o.OK = run, true
	return o
}

// ReadRun folds a result file into its run model as it reads, so a file of
// a million requests is never held; samples keeps what A/B tests need. It
// stops with ctx's error when ctx ends (Ctrl-C on a large file).
func ReadRun(ctx context.Context, path string, samples bool) (*analyze.Run, error) {
	// Another tool's result file (told by content) is read by foreign:
	// its summaries hold no per-request samples to keep.
	if tool, err := foreign.Sniff(path); err == nil && tool != "" {
		return foreign.Read(path)
	}
	var feed *twinFeed
	fold, err := readFoldEach(ctx, path, samples, func(h *results.Header, r *record.Record) {
		if feed == nil {
			feed = newTwinFeed(h.Setup)
		}
		feed.add(r)
	})
	if err != nil {
		return nil, err
	}
	run := fold.Run()
	if feed != nil && !run.Integrity.Interrupted {
		feed.attach(run)
	}
	return run, nil
}

// readFold folds a result file, as ReadRun does, without samples.
func readFold(ctx context.Context, path string) (*analyze.Fold, error) {
	return readFoldOf(ctx, path, false)
}

func readFoldOf(ctx context.Context, path string, samples bool) (*analyze.Fold, error) {
	return readFoldEach(ctx, path, samples, nil)
}

// readFoldEach is readFoldOf that also hands each record to each (when
// set) as it is folded.
func readFoldEach(ctx context.Context, path string, samples bool, each func(*results.Header, *record.Record)) (*analyze.Fold, error) {
	r, f, err := results.OpenContext(ctx, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var fold *analyze.Fold
	for r.Next() {
		if fold == nil {
			fold = analyze.NewFold(r.Header().Setup, path)
			if samples {
				fold.KeepSamples()
			}
		}
		rec := r.Record()
		fold.Add(&rec)
		if each != nil {
			each(r.Header(), &rec)
		}
		if rec.ID%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if fold == nil {
		fold = analyze.NewFold(r.Header().Setup, path)
	}
	fold.Metrics(r.Metrics())
	fold.GPU(r.GPU())
	fold.Slices(r.Slices())
	end := r.End()
	fold.Integrity(r.Truncated(), end != nil, end != nil && end.Interrupted)
	fold.Duplicates(r.Duplicates())
	return fold, nil
}

func safeName(s string) string { return strings.NewReplacer("/", "_", " ", "_").Replace(s) }

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }
