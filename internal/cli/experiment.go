package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/baseline"
	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/experiment"
)

// experimentCmd is tokperf experiment FILE.yaml: for each configuration,
// start it, wait until it is ready, check it answers correctly, sweep each
// workload, measure overhead, soak it, stop it and free its port; then
// compare the ones that passed and give the verdicts.
func experimentCmd(ctx context.Context, cmd string, args []string, e *env) error {
	fs := newFlags(cmd)
	outDir := fs.StringP("out", "o", "", "directory for logs and result files (default ./tokperf-results/TIMESTAMP-experiment)")
	registerForce(fs, &e.bench.Force)
	var format string
	registerFormat(fs, &format)
	pos, err := parseMixed(fs, args, e)
	if err != nil {
		return err
	}
	if err := checkFormat(format); err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("give one experiment file")
	}
	f, err := experiment.Load(pos[0])
	if err != nil {
		return err
	}
	plan, err := experimentPlan(ctx, f)
	if err != nil {
		return err
	}
	dir, err := experimentDir(*outDir, e.bench.Force)
	if err != nil {
		return err
	}
	// Progress goes with the text report to stdout; a machine-readable
	// report keeps stdout to itself.
	benv := e.progress(nil)
	if format == "text" {
		benv.Progress = e.stdout
	}
	res, err := bench.Experiment(ctx, plan, dir, benv)
	if err != nil {
		return err
	}
	if page(format) && e.tty {
		// The page goes into the experiment's folder, the text to the terminal.
		err = e.pageTo(filepath.Join(dir, "experiment."+format), format, res)
	} else {
		err = e.render(format, res, "")
	}
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	if res.Passed == 0 {
		return errCheckFailed // no configuration passed: the verdict above says so
	}
	return someFailed(res)
}

// configsFailed ends an experiment some of whose configurations failed
// (could not start, were not ready, failed a required check) while others
// passed: exit 3, as a run some of whose requests failed.
type configsFailed struct {
	names []string
	total int
}

func (e *configsFailed) Error() string {
	return fmt.Sprintf("%d of %d configurations failed: %s (the comparison above is of the others)", len(e.names), e.total, strings.Join(e.names, ", "))
}

// someFailed is a configsFailed naming the configurations that did not
// pass, nil when every one did.
func someFailed(res *analyze.Experiment) error {
	var names []string
	for _, c := range res.Configs {
		if !c.OK {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return &configsFailed{names, len(res.Configs)}
}

// experimentDir is the folder an experiment writes to: the one -o names,
// refused where it already holds files unless force says to replace them;
// by default a new one named for the second, with -2, -3 … where another
// experiment of that second made it.
func experimentDir(dir string, force bool) (string, error) {
	if dir != "" {
		if files, err := os.ReadDir(dir); err == nil && len(files) > 0 && !force {
			return "", fmt.Errorf("-o %s: the folder holds %d files already; give --force to replace its results, or another -o", dir, len(files))
		}
		return dir, nil
	}
	base := filepath.Join("tokperf-results", time.Now().Format("20060102-150405")+"-experiment")
	if err := os.MkdirAll("tokperf-results", 0o755); err != nil {
		return "", fmt.Errorf("creating the experiment's folder: %w", err)
	}
	for n := 1; ; n++ {
		dir = base
		if n > 1 {
			dir = fmt.Sprintf("%s-%d", base, n)
		}
		err := os.Mkdir(dir, 0o755)
		if err == nil || !errors.Is(err, os.ErrExist) || n >= 1000 {
			return dir, err
		}
	}
}

// notExperimentKeys are flags an experiment sets itself: the server's URL
// is each configuration's, the files go to -o, the report is the
// experiment's, and a configuration is not sharded.
var notExperimentKeys = map[string]string{
	"url": "each configuration's url: sets it", "out": "the experiment's -o names the files", "format": "give --format to tokperf experiment",
	"sim-profile": "each configuration runs its own server command", "quiet": "the experiment shows its own progress",
	"debug-addr": "not in an experiment", "live": "not in an experiment", "percentiles": "give --format json for every percentile", "max-error-rate": "not in an experiment",
	"shard": "an experiment does not shard", "start-at": "an experiment does not shard", "barrier": "an experiment does not shard",
	"barrier-timeout": "an experiment does not shard", "run-id": "an experiment does not shard", "clock-url": "an experiment does not shard",
}

// loadKeys are the keys of how much load and for how long: a soak takes
// the sweep's workload but not these.
var loadKeys = []string{"concurrency", "rate", "requests", "max-stage-time", "max-stage-s", "duration", "repeat", "until-saturated", "max-concurrency", "slice"}

// located are keys with where each came from in the file ("sweep",
// "configs[1].sweep", "workloads[0]").
type located struct {
	keys map[string]any
	from map[string]string
}

// layer adds keys found at path over the ones already there; skip keys are
// left out.
func (l *located) layer(keys experiment.Keys, path string, skip ...string) {
	if l.keys == nil {
		l.keys, l.from = map[string]any{}, map[string]string{}
	}
	for k, v := range keys {
		name := keyName(k)
		if name == "name" && strings.HasPrefix(path, "workloads[") || slices.Contains(skip, name) {
			continue
		}
		for old := range l.keys {
			if keyName(old) == name {
				delete(l.keys, old)
			}
		}
		l.keys[k], l.from[k] = v, path+"."+k
	}
}

// apply sets the flags of fs from the keys, with errors naming the file's
// line and field.
func (l *located) apply(fs *flagSet, f *experiment.File) error {
	m := maps.Clone(l.keys)
	for k, v := range l.keys {
		name := keyName(k)
		if why, ok := notExperimentKeys[name]; ok {
			return usagef("%s:%d: %s: %s", f.Path, f.Line(l.from[k]), l.from[k], why)
		}
		if name == "max-stage-s" { // the experiment file's first spelling
			delete(m, k)
			m["max-stage-time"] = fmt.Sprintf("%vs", v)
			l.from["max-stage-time"] = l.from[k]
		}
	}
	return applyKeys(fs, m, func(k string) string {
		return fmt.Sprintf("%s:%d: %s", f.Path, f.Line(l.from[k]), l.from[k])
	})
}

// locate names the file's line of the first key a flag's complaint
// names (--seed …), or the block (cmd) when it names none of them.
func (l *located) locate(file *experiment.File, cmd string, err error) error {
	msg := err.Error()
	best, at := -1, ""
	for k := range l.keys {
		if i := strings.Index(msg, "--"+keyName(k)); i >= 0 && (best < 0 || i < best) {
			best, at = i, l.from[k]
		}
	}
	if at == "" {
		if cmd == "sweep" {
			cmd = file.SweepAt
		}
		return usagef("%s:%d: %s: %s", file.Path, file.Line(cmd), cmd, msg)
	}
	return usagef("%s:%d: %s: %s", file.Path, file.Line(at), at, msg)
}

// experimentPlan builds every configuration's sweeps, overhead and soak
// from the file's keys, as the flags of sweep, overhead and soak; an
// error names the file, the line and the key.
func experimentPlan(ctx context.Context, f *experiment.File) (*bench.ExperimentPlan, error) {
	plan := &bench.ExperimentPlan{File: f}
	for i, c := range f.Configs {
		at := fmt.Sprintf("configs[%d].sweep", i)
		var cp bench.ConfigPlan
		workloads := f.Workloads
		if len(workloads) == 0 {
			workloads = []experiment.Keys{nil}
		}
		for j, w := range workloads {
			var l located
			l.layer(f.Sweep, f.SweepAt)
			l.layer(c.Sweep, at)
			l.layer(w, fmt.Sprintf("workloads[%d]", j))
			wp, levels, err := sweepPlan(ctx, f, &l, "sweep")
			if err != nil {
				return nil, err
			}
			wp.Name = experiment.WorkloadName(w)
			cp.Workloads = append(cp.Workloads, wp)
			if plan.Levels == nil {
				plan.Levels = levels
			}
		}
		if f.Soak != nil {
			var l located
			l.layer(f.Sweep, f.SweepAt, loadKeys...)
			l.layer(c.Sweep, at, loadKeys...)
			l.layer(f.Soak, "soak")
			wp, _, err := sweepPlan(ctx, f, &l, "soak")
			if err != nil {
				return nil, err
			}
			cp.Soak = &wp
		}
		if f.Overhead != nil {
			oc, err := overheadPlan(f, c, at)
			if err != nil {
				return nil, err
			}
			cp.Overhead = oc
		}
		plan.Configs = append(plan.Configs, cp)
	}
	b, err := experimentBaseline(ctx, f)
	plan.Baseline = b
	return plan, err
}

// sweepPlan is one sweep of the experiment (cmd sweep or soak) from its
// keys, checked as the command's flags are, and its levels.
func sweepPlan(ctx context.Context, file *experiment.File, l *located, cmd string) (bench.WorkloadPlan, []int, error) {
	fs := newFlags(cmd)
	var f loadFlags
	f.register(fs, cmd)
	if err := l.apply(fs, file); err != nil {
		return bench.WorkloadPlan{}, nil, err
	}
	if err := f.check(fs); err != nil {
		return bench.WorkloadPlan{}, nil, l.locate(file, cmd, err)
	}
	if cmd == "soak" && (len(f.conc) > 1 || len(f.rates) > 1) {
		return bench.WorkloadPlan{}, nil, usagef("%s:%d: soak: one level: give one concurrency", file.Path, file.Line("soak"))
	}
	if f.seed == 0 {
		f.seed = 1 // every configuration is sent the same prompts
	}
	build := func(seed int64) (bench.SweepConfig, error) {
		f.seed = seed
		prompts, err := f.prompts(ctx)
		if err != nil {
			return bench.SweepConfig{}, err
		}
		return bench.SweepConfig{Target: f.targetOf(), Workload: f.workload(), Prompts: prompts, ServerPrompts: f.serverPrompts(ctx), Load: f.load(), SLO: f.slo(), Preset: f.presetSet}, nil
	}
	// Build once now, so a bad dataset or tokenizer is told before any
	// server starts.
	cfg, err := build(f.seed)
	if err != nil {
		return bench.WorkloadPlan{}, nil, usagef("%s: %s: %v", file.Path, cmd, err)
	}
	if cfg.Prompts != nil {
		cfg.Prompts.Close()
	}
	return bench.WorkloadPlan{Seed: f.seed, Build: build}, f.conc, nil
}

// overheadPlan is the overhead section as tokperf overhead's flags, over
// the sweep's and the configuration's keys that overhead takes (headers,
// extra body, lengths), but not their load or their endpoint.
func overheadPlan(file *experiment.File, c experiment.Config, at string) (*bench.OverheadConfig, error) {
	fs := newFlags("overhead")
	var f loadFlags
	f.register(fs, "overhead")
	f.outputTokens.Set("200")
	f.conc.Set("1,8,32")
	skip := append([]string{"endpoint"}, loadKeys...)
	for _, keys := range []experiment.Keys{file.Sweep, c.Sweep} {
		for k := range keys {
			if fs.Lookup(keyName(k)) == nil {
				skip = append(skip, keyName(k))
			}
		}
	}
	var l located
	l.layer(file.Sweep, file.SweepAt, skip...)
	l.layer(c.Sweep, at, skip...)
	l.layer(file.Overhead, "overhead")
	if err := l.apply(fs, file); err != nil {
		return nil, err
	}
	if err := f.check(fs); err != nil {
		return nil, l.locate(file, "overhead", err)
	}
	if f.endpoint == "chat" {
		return nil, usagef("%s:%d: overhead.endpoint: names the raw endpoint to compare with chat", file.Path, file.Line("overhead.endpoint"))
	}
	if f.seed == 0 {
		f.seed = 1
	}
	return &bench.OverheadConfig{Target: f.target(), Workload: f.workload(), Levels: f.conc, Requests: f.requestsOne(), Warmup: int(f.warmup), Timeout: f.timeout}, nil
}

// experimentBaseline is the file's baseline: a published one by name, or
// another tool's result file made into one.
func experimentBaseline(ctx context.Context, f *experiment.File) (*baseline.Baseline, error) {
	b := f.Baseline
	if b == nil {
		return nil, nil
	}
	if b.File != "" {
		run, err := bench.ReadRun(ctx, b.File, false)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: baseline.file: %w", f.Path, f.Line("baseline.file"), err)
		}
		return analyze.BaselineOfRun(b.File, run), nil
	}
	all, err := loadBaselines(b.Baselines)
	if err != nil {
		return nil, err
	}
	if found := baseline.Find(all, b.Name); found != nil {
		return found, nil
	}
	return nil, usagef("%s:%d: baseline.name: no baseline %q (tokperf baselines lists them)", f.Path, f.Line("baseline.name"), b.Name)
}

// experimentKeysHelp lists every key of an experiment file, and the flags
// each block of sweep keys takes, by the names --config accepts.
func experimentKeysHelp() string {
	flags := func(cmd string) string {
		fs := newFlags(cmd)
		var f loadFlags
		f.register(fs, cmd)
		var names []string
		fs.VisitAll(func(fl *pflag.Flag) {
			if _, not := notExperimentKeys[fl.Name]; !not && fl.Name != "config" && !fl.Hidden {
				names = append(names, fl.Name)
			}
		})
		return wrapWords(strings.Join(names, ", "), 96, "    ")
	}
	return `

The file's keys (snake or kebab case alike, as in --config: input_tokens is input-tokens):
  configs:               the server configurations, started one at a time, in order; each has
    name, command (program and arguments), shell (run command with sh -c), env, dir,
    url (where it answers), ready_timeout_s (default 600), grace_s (SIGTERM to SIGKILL, default 10),
    sweep                its own sweep keys, over the file's (a seed, --extra-body for this server)
  sweep: (or defaults:)  the sweep every configuration runs: the flags of tokperf sweep by their
                         long names, e.g. concurrency: [1, 32], output_tokens: 100, seed: 7
                         (default seed 1: every configuration is sent the same prompts);
                         max_stage_s: 10 is max_stage_time: 10s
  workloads:             two or more named workloads swept on each configuration (representative?):
                         each a name, then sweep keys over the sweep's, e.g. dataset: FILE
  overhead:              the paired raw-vs-chat measurement on each configuration: the flags of
                         tokperf overhead (default concurrency 1,8,32, output_tokens 200), over
                         the sweep's keys it takes but their load and endpoint
  soak:                  one level in time slices on each configuration (stable?): the flags of
                         tokperf soak (concurrency, duration, slice), over the sweep's workload keys
  baseline:              compared with each configuration (fair?): name (tokperf baselines lists
                         them) or file (another tool's result file), baselines (your own YAML),
                         gpus and gpu (behind each configuration), claim (a ratio to check, 3x)
  check:                 mode (required: a failure stops that configuration; report: shown, nothing
                         stops), smoke (sensible output, determinism; default true), accuracy (the
                         questions; default true), questions (default 20), min_accuracy (default
                         0.9), skip (no check)
  repeat:                run each sweep N times, levels interleaved in one server life, or with
  restart_between_repeats: true, the configurations in turn (A B A B), each on a fresh server
Each configuration: start, ready, check, each workload's sweep, overhead, soak, stop, port free;
then the comparison and the four verdicts: representative, configurations (does MTP help?),
fair, stable.

Sweep keys (and a workload's, a configuration's sweep:):
` + flags("sweep") + `
Overhead keys:
` + flags("overhead") + `
Soak keys:
` + flags("soak")
}

// wrapWords wraps a comma-separated list at width, each line indented.
func wrapWords(s string, width int, indent string) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(s) {
		if len(line)+len(w)+1 > width && line != indent {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = indent
		}
		line += w + " "
	}
	return b.String() + strings.TrimRight(line, " ")
}
