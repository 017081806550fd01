package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/baseline"
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

// ExperimentPlan is an experiment file with its sweeps built: the command
// line turns the file's keys into sweep, overhead and soak configurations
// the way it turns flags, and hands them here.
type ExperimentPlan struct {
	File *experiment.File
	// Configs[i] is what runs on the file's configuration i.
	Configs []ConfigPlan
	// Levels are the comparison's concurrency levels.
	Levels []int
	// Baseline, when set, is compared with each configuration's run
	// (a published one, or another tool's run made into one).
	Baseline *baseline.Baseline
}

// ConfigPlan is what runs on one configuration, within one server life.
type ConfigPlan struct {
	// Workloads are its sweeps: one (named "") without workloads: in the
	// file, else one per named workload.
	Workloads []WorkloadPlan
	Overhead  *OverheadConfig // nil: not asked
	Soak      *WorkloadPlan   // nil: not asked
}

// WorkloadPlan is one sweep, built for a seed (each repeat on a restarted
// server has its own).
type WorkloadPlan struct {
	Name  string
	Seed  int64
	Build func(seed int64) (SweepConfig, error)
}

// RepeatSeed is the seed of repeat r of a sweep seeded with seed: the
// first repeat keeps it.
func RepeatSeed(seed int64, r int) int64 { return seed + int64(r)*7919 }

// Experiment takes each configuration of the plan from start to stop:
// start its command, wait until it is ready (health, models and a first
// generation), check it answers correctly, sweep each workload, measure
// the chat API's overhead, soak it, stop its process group and free its
// port; then compares those that passed and gives the verdicts. Logs
// and result files go to dir.
func Experiment(ctx context.Context, plan *ExperimentPlan, dir string, env *Env) (*analyze.Experiment, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f := plan.File
	res := &analyze.Experiment{Schema: analyze.ExperimentSchema, ChecksSkipped: f.Check.Skip, CheckMode: f.Check.Mode,
		Asked: analyze.ExperimentAsked{Overhead: f.Overhead != nil, Soak: f.Soak != nil, Repeat: f.Repeat, Restart: f.Restart}}
	if b := f.Baseline; b != nil {
		res.Asked.Baseline = firstNonEmpty(b.Name, b.File)
	}
	for _, w := range f.Workloads {
		res.Workloads = append(res.Workloads, experiment.WorkloadName(w))
	}
	rounds := 1
	if f.Repeat > 1 && (f.Restart || len(f.Configs) > 1) {
		// A B A B …, each on a fresh server: where configurations are
		// compared, repeat i of each ran next to the other's, so a drift
		// of the machine falls on both sides of a pair (METRICS.md,
		// "Error model").
		rounds = f.Repeat
		res.Asked.Interleaved = len(f.Configs) > 1
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
			o := runConfig(ctx, f, c, plan.Configs[i], dir, r, rounds, env)
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
		if len(f.Workloads) == 0 {
			o.Workloads = nil // one sweep: its run says it all
		}
		if plan.Baseline != nil && o.OK && o.Run != nil {
			gpus, gpu, claim := f.Baseline.GPUs, f.Baseline.GPU, f.Baseline.Claim
			if b, err := analyze.AgainstBaselineRun(o.Run, plan.Baseline, gpus, gpu, claim); err != nil {
				o.Problems = append(o.Problems, "baseline: "+err.Error())
			} else {
				o.Baseline = b
			}
		}
		res.Configs = append(res.Configs, o)
	}
	res.CompareConfigs(plan.Levels)
	res.ComputeVerdicts()
	return res, nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// joinRepeats is one configuration's outcome over its restarted repeats:
// ok when every repeat was, each workload's run the repeats' files folded
// as repeats of one run; every repeat's log and seed are kept.
func joinRepeats(ctx context.Context, outs []analyze.ExperimentConfig) analyze.ExperimentConfig {
	o := outs[0]
	o.Logs, o.Seeds = nil, nil
	var reasons []string
	for i, r := range outs {
		o.Logs = append(o.Logs, r.Logs...)
		o.Seeds = append(o.Seeds, r.Seeds...)
		o.CheckFailed = o.CheckFailed || r.CheckFailed
		o.StoppedS = max(o.StoppedS, r.StoppedS)
		if !r.OK {
			reasons = append(reasons, fmt.Sprintf("repeat %d: %s", i+1, r.Reason))
		}
	}
	o.Log = outs[len(outs)-1].Log
	o.OK, o.Reason, o.Run = false, strings.Join(reasons, "; "), nil
	if len(reasons) > 0 {
		o.Workloads = nil
		return o
	}
	for w := range o.Workloads {
		var files []string
		for _, r := range outs {
			files = append(files, r.Workloads[w].Result)
		}
		run, err := ReadRepeats(ctx, files, true)
		if err != nil {
			o.Reason = err.Error()
			return o
		}
		o.Workloads[w] = analyze.WorkloadRun{Name: o.Workloads[w].Name, Result: strings.Join(files, ", "), Run: run}
	}
	o.Run, o.Result, o.OK = o.Workloads[0].Run, o.Workloads[0].Result, true
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
		hs := r.Hosts()
		for i := range hs {
			hs[i].Stage += k * levels
		}
		fold.Host(hs...)
	}
	fold.Integrity(false, true, false)
	return fold.Run(), nil
}

// runConfig takes one configuration from start to stop; whatever happens,
// its process group is stopped and its port freed before it returns.
func runConfig(ctx context.Context, f *experiment.File, c experiment.Config, plan ConfigPlan, dir string, repeat, rounds int, env *Env) (o analyze.ExperimentConfig) {
	o = analyze.ExperimentConfig{Name: c.Name}
	progress := env.progress()
	baseline, gpus := experiment.GPUMemory()
	stem := safeName(c.Name)
	if rounds > 1 {
		stem = fmt.Sprintf("%s-r%d", stem, repeat+1)
	}
	// Something already there would be measured in its place, then taken
	// for this server dying when it ends.
	if err := experiment.PortFree(c.URL, 0); err != nil {
		o.Reason = fmt.Sprintf("not started: %v before its command ran (a server left by an earlier run? stop it, or give %s another port)", err, c.Name)
		return o
	}
	p, err := experiment.StartLogged(c, filepath.Join(dir, stem+".log"))
	if err != nil {
		o.Reason = err.Error()
		return o
	}
	o.Log, o.Logs = p.Log, []string{p.Log}
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
	if reason := ready(ctx, c, p, progress); reason != "" {
		o.Reason = reason
		return o
	}
	// Each phase shows its own progress under the configuration: stage
	// starts and ends, and a live line every few seconds, so no phase (a
	// soak, the overhead) is minutes of silence. The experiment's folder
	// is its own (cli refuses one already used without --force): its
	// files are replaced.
	quiet := &Env{Getenv: env.getenv, Listen: env.Listen, Dial: env.Dial, Progress: &indented{w: progress}, Live: ProgressLines, LiveEvery: env.LiveEvery, Force: true}
	if reason := runCheck(ctx, f, c, dir, stem, quiet, progress, &o); reason != "" {
		o.Reason = reason
		return o
	}
	for _, w := range plan.Workloads {
		seed := RepeatSeed(w.Seed, repeat)
		if w.Name == "" || len(o.Seeds) == 0 {
			o.Seeds = append(o.Seeds, seed)
		}
		out := filepath.Join(dir, stem+".jsonl")
		if w.Name != "" {
			out = filepath.Join(dir, fmt.Sprintf("%s-%s.jsonl", stem, safeName(w.Name)))
			fmt.Fprintf(progress, "workload %s (seed %d) ...\n", w.Name, seed)
		}
		run, reason := sweepOne(ctx, c, p, w, seed, out, rounds > 1, f.Repeat, quiet)
		if reason != "" {
			o.Reason = reason
			if w.Name != "" {
				o.Reason = "workload " + w.Name + ": " + reason
			}
			return o
		}
		o.Workloads = append(o.Workloads, analyze.WorkloadRun{Name: w.Name, Result: out, Run: run})
	}
	if len(o.Workloads) > 0 {
		o.Run, o.Result = o.Workloads[0].Run, o.Workloads[0].Result
	}
	if repeat == 0 {
		extras(ctx, c, p, plan, dir, stem, quiet, progress, &o)
	}
	o.OK = true
	return o
}

// ready waits until the configuration's server answers and generates, and
// says why not ("" once it does).
func ready(ctx context.Context, c experiment.Config, p *experiment.Process, progress io.Writer) string {
	timeout := time.Duration(c.ReadyTimeoutS * float64(time.Second))
	// Ready: /health and /v1/models answer, unless the process ends first;
	// then one generation, all within the one timeout.
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	go func() {
		select {
		case <-p.Done():
			cancel()
		case <-rctx.Done():
		}
	}()
	took, err := backend.WaitReady(rctx, backend.NewClient(2, nil), c.URL, "", timeout)
	if exited, how := p.Exited(); exited {
		return "exited at start: " + how
	}
	if err != nil {
		return fmt.Sprintf("not ready after %.0f s", c.ReadyTimeoutS)
	}
	// Answering /health is not generating: wait for one 1-token generation
	// too, as --wait-ready does.
	if server, models, err := backend.Detect(rctx, backend.NewClient(2, nil), c.URL, ""); err == nil {
		model := ""
		if len(models) > 0 {
			model = models[0]
		}
		b, err := backend.New(backend.Config{URL: c.URL, Endpoint: engine.DefaultEndpoint(server.Engine), Engine: server.Engine, Model: model})
		if err == nil {
			more, err := FirstGeneration(rctx, b, timeout-time.Since(start))
			b.Close()
			switch {
			case err != nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
				return fmt.Sprintf("answered /health but did not generate within ready_timeout_s (%g s)", c.ReadyTimeoutS)
			case err != nil:
				return "answered /health but never generated: " + oneLine(err)
			}
			took += more
		}
	}
	fmt.Fprintf(progress, "ready after %.1f s (health, models and a first generation)\n", took.Seconds())
	return ""
}

// checkItems are the check's items as its switches ask: the smoke half
// (sensible output, determinism) and the questions. The tool-call item
// is left out: an experiment's configurations speak the raw endpoint,
// which sends no tools.
func checkItems(ch experiment.Check) []check.Item {
	var out []check.Item
	for _, it := range check.Items(1, ch.Questions) {
		if it.Kind == "tools" {
			continue
		}
		if (it.Kind == "question" && ch.AccuracyOn()) || (it.Kind != "question" && ch.SmokeOn()) {
			out = append(out, it)
		}
	}
	return out
}

// runCheck runs the configuration's check and says why it stops there
// ("" to go on: passed, skipped, or failed in report mode).
func runCheck(ctx context.Context, f *experiment.File, c experiment.Config, dir, stem string, quiet *Env, progress io.Writer, o *analyze.ExperimentConfig) string {
	items := checkItems(f.Check)
	if f.Check.Skip || len(items) == 0 {
		return ""
	}
	minAcc := f.Check.MinAccuracy
	if !f.Check.AccuracyOn() {
		minAcc = 0
	}
	res, err := Check(ctx, CheckConfig{Target: Target{URL: c.URL}, Items: items, Concurrency: DefaultCheckConc,
		MaxTokens: DefaultMaxTokens, MinAccuracy: minAcc, Seed: 1, Out: filepath.Join(dir, stem+"-check.jsonl")}, quiet)
	if err != nil {
		return "check: " + oneLine(err)
	}
	o.Check = res
	if a := res.Accuracy; a != nil {
		fmt.Fprintf(progress, "accuracy %d of %d = %.1f%% (the threshold is %.0f%%)\n", a.Right, a.Total, 100*a.Share, 100*a.Threshold)
	}
	for _, line := range res.Failures {
		fmt.Fprintln(progress, "FAIL "+line)
	}
	if res.Passed {
		return ""
	}
	o.CheckFailed = true
	if f.Check.Report() {
		fmt.Fprintln(progress, "the check failed; check mode is report: measured and compared all the same")
		return ""
	}
	return "failed its correctness checks"
}

// sweepOne runs one workload's sweep on a started server and reads its run
// back with its samples; the reason is why it has none.
func sweepOne(ctx context.Context, c experiment.Config, p *experiment.Process, w WorkloadPlan, seed int64, out string, restart bool, repeat int, quiet *Env) (*analyze.Run, string) {
	cfg, err := w.Build(seed)
	if err != nil {
		return nil, oneLine(err)
	}
	if cfg.Prompts != nil {
		defer cfg.Prompts.Close()
	}
	cfg.Command, cfg.Out = "sweep", out
	cfg.Target.URL = c.URL
	if !restart && repeat > 1 {
		cfg.Load.Repeat = repeat
	}
	_, err = Sweep(ctx, cfg, quiet)
	// The run is read back from its file with its samples, for the A/B.
	run, rerr := ReadRun(ctx, out, true)
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
		return nil, fmt.Sprintf("died mid-sweep (%d requests failed): %s", failures, how)
	}
	if err != nil {
		return nil, "sweep: " + oneLine(err)
	}
	if rerr != nil {
		return nil, rerr.Error()
	}
	return run, ""
}

// extras are the optional parts of the loop on a configuration that
// swept: the chat API's overhead and the soak. What goes wrong there is a
// problem shown with the configuration, not its failure.
func extras(ctx context.Context, c experiment.Config, p *experiment.Process, plan ConfigPlan, dir, stem string, quiet *Env, progress io.Writer, o *analyze.ExperimentConfig) {
	if oc := plan.Overhead; oc != nil {
		cfg := *oc
		cfg.Target.URL, cfg.Out = c.URL, filepath.Join(dir, stem+"-overhead.jsonl")
		fmt.Fprintln(progress, "overhead: the chat API against the raw endpoint ...")
		if res, err := Overhead(ctx, cfg, quiet); err != nil {
			o.Problems = append(o.Problems, "overhead: "+oneLine(err))
		} else {
			o.Overhead = res
		}
	}
	if s := plan.Soak; s != nil {
		out := filepath.Join(dir, stem+"-soak.jsonl")
		fmt.Fprintln(progress, "soak ...")
		run, reason := sweepOne(ctx, c, p, *s, s.Seed, out, true, 1, quiet)
		if reason != "" {
			o.Problems = append(o.Problems, "soak: "+reason)
			return
		}
		o.Soak, o.SoakResult = run, out
	}
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
	fold.Host(r.Hosts()...)
	end := r.End()
	fold.Integrity(r.Truncated(), end != nil, end != nil && end.Interrupted)
	fold.Duplicates(r.Duplicates())
	return fold, nil
}

func safeName(s string) string { return strings.NewReplacer("/", "_", " ", "_").Replace(s) }

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// indented writes each line with two spaces before it: a phase's progress
// under its configuration's. Lines may come from several goroutines.
type indented struct {
	mu  sync.Mutex
	w   io.Writer
	mid bool // the last write ended mid-line
}

func (in *indented) Write(b []byte) (int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []byte
	for _, c := range b {
		if !in.mid {
			out = append(out, ' ', ' ')
		}
		out = append(out, c)
		in.mid = c != '\n'
	}
	if _, err := in.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}
