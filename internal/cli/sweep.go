package cli

import (
	"cmp"
	"context"
	"fmt"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/report"
	"github.com/tokperf/tokperf/internal/shard"
)

// loadCmd is tokperf run and tokperf sweep.
func loadCmd(ctx context.Context, cmd string, args []string, e *env) error {
	fs := newFlags(cmd)
	var f loadFlags
	f.register(fs, cmd)
	if err := parse(fs, args, e); err != nil {
		return err
	}
	if err := f.check(fs); err != nil {
		return err
	}
	f.warn(e)
	sh, e, err := f.sharding(fs, e) // and the run's seed
	if err != nil {
		return err
	}
	if page(f.format) && e.tty && f.out == "-" {
		return pageOnTerminal(cmd, f.format) // stdout holds the result file
	}
	if err := f.oneStage(cmd); err != nil || e.dryRun {
		return cmp.Or(err, checkShard(sh, &f), errParsed)
	}
	benv := e.progress(func(s record.Setup) {
		fmt.Fprintln(e.stderr, report.Describe(s))
		if sh != nil {
			fmt.Fprintln(e.stderr, describeShard(sh))
		}
	})
	benv.Live, benv.Force = liveMode(e.stderr, f.quiet), f.force
	if f.debugAddr != "" {
		addr, err := bench.Debug(ctx, f.debugAddr, benv)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "debug: http://%s/debug/pprof/ and /debug/vars\n", addr)
	}
	prompts, err := f.prompts(ctx)
	if err != nil {
		return err
	}
	if prompts != nil {
		defer prompts.Close()
	}
	run, err := bench.Sweep(ctx, bench.SweepConfig{Command: cmd, Target: f.targetOf(), Workload: f.workload(), Prompts: prompts, ServerPrompts: f.serverPrompts(ctx), Load: f.load(), SLO: f.slo(), Out: f.out, Stdout: e.results, Shard: sh, Live: f.liveOut, Preset: f.presetSet}, benv)
	if run == nil {
		return err
	}
	f.view(run)
	// A run that stopped early still reports what finished.
	if rerr := e.render(f.format, run, run.File); rerr != nil {
		return rerr
	}
	if err != nil {
		return err
	}
	if run.Integrity.Interrupted {
		return errInterrupted
	}
	failed, total := run.Failed()
	return cmp.Or(judge(failed, total, f.maxErrorRate), presetVerdict(run), strictly(f.strict, run.Withheld()))
}

// oneStage refuses more than one level or rate for a command of one stage
// (run, soak).
func (f *loadFlags) oneStage(cmd string) error {
	if cmd != "sweep" && len(f.conc) > 1 && len(f.rates) == 0 {
		return usagef("%s is one stage: give one -c level, or use sweep", cmd)
	}
	if cmd != "sweep" && len(f.rates) > 1 {
		return usagef("%s is one stage: give one --rate, or use sweep", cmd)
	}
	return nil
}

// sharding is the run's shard (nil: none) and the env to report in (with
// -o - the result file alone goes to stdout); it sets the run's seed.
func (f *loadFlags) sharding(fs *flagSet, e *env) (*shard.Config, *env, error) {
	sh, err := f.shard.config(fs)
	if err != nil {
		return nil, nil, err
	}
	if sh != nil && f.seed == 0 {
		f.seed = shard.Seed(sh.RunID) // the shards agree on their prompts' seed
	}
	if f.out == "-" {
		if f.stab.slice > 0 {
			return nil, nil, usagef("-o - does not mix with --slice: a sliced run reads its file back")
		}
		e = e.toStderr()
	}
	f.runSeed()
	return sh, e, nil
}

// toStderr is e for -o -: the result file goes to stdout (e.results) and
// nothing else does, the report included.
func (e *env) toStderr() *env {
	out := *e
	out.results, out.stdout = e.stdout, e.stderr
	out.tty = e.errTTY
	return &out
}

// progress is the bench environment with progress on stderr and started
// called once the setup is known.
func (e *env) progress(started func(record.Setup)) *bench.Env {
	b := e.bench
	b.Progress, b.Started = e.stderr, started
	return &b
}

// render writes a job's result in format; the text report of a job with a
// result file is set off by a blank line and followed by where the records are (on stderr for the
// machine-readable formats, so stdout stays clean).
func (e *env) render(format string, result any, file string) error {
	if page(format) && e.tty && (file == "" || file == "-") {
		return pageOnTerminal("run", format)
	}
	if page(format) && e.tty {
		if err := e.pageTo(pageBeside(file, "", format), format, result); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "results: %s\n", file)
		return nil
	}
	if format != "text" {
		if err := report.Render(e.stdout, format, result); err != nil {
			return err
		}
		if file != "" {
			fmt.Fprintf(e.stderr, "results: %s\n", file)
		}
		return nil
	}
	if file != "" {
		fmt.Fprintln(e.stdout)
	}
	if err := report.Render(e.stdout, format, result); err != nil {
		return err
	}
	if file != "" {
		fmt.Fprintf(e.stdout, "results: %s\n", file)
	}
	return nil
}
