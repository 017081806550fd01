package cli

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/baseline"
	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/report"
)

// reportCmd is tokperf report: the report of saved result files, in any format.
func reportCmd(ctx context.Context, cmd string, args []string, e *env) error {
	fs := newFlags(cmd)
	var format string
	registerFormat(fs, &format)
	var pflags ints
	var wide bool
	registerPercentiles(fs, &pflags, &wide)
	var cf chartFlags
	cf.register(fs)
	fs.IntVar(&cf.gpus, "gpus", 0, "GPUs behind each run whose file does not say (its per-GPU figures and charts)")
	cf.hw.register(fs)
	var strict bool
	registerStrict(fs, &strict)
	paths, err := parseMixed(fs, args, e)
	if err != nil {
		return err
	}
	if len(paths) == 0 || cf.gpus < 0 {
		return usagef("give at least one result file (and --gpus ≥ 1)")
	}
	ps, err := percentiles(pflags)
	if err != nil {
		return err
	}
	if err := checkFormat(format); err != nil {
		return err
	}
	var withheld []string
	each := func(e *env) error {
		return reportEach(ctx, paths, format, runView{ps, wide, cf.gpus, &cf.hw}, e, &withheld)
	}
	if together(format) {
		each = func(e *env) error { return cf.reportTogether(ctx, paths, format, e, &withheld) }
	}
	beside := page(format) && e.tty && cf.out == ""
	if beside {
		cf.out = pageBeside(paths[0], "", format)
	}
	if err := cf.write(e, each); err != nil {
		return err
	}
	if beside {
		// The terminal gets the text report; the page went to a file.
		if err := reportEach(ctx, paths, "text", runView{ps, wide, cf.gpus, &cf.hw}, e, new([]string)); err != nil {
			return err
		}
		e.saidPage(cf.out, format)
	}
	return strictly(strict, withheld)
}

// runView is how report shows each run: the text table's percentiles and
// width, and the GPU count of a file that states none.
type runView struct {
	ps   []float64
	wide bool
	gpus int
	hw   *hwFlags
}

// reportEach renders each file in turn as v says, adding the verdicts
// each run withholds to withheld.
func reportEach(ctx context.Context, paths []string, format string, v runView, e *env, withheld *[]string) error {
	// Records are folded into their stage's figures as they are read, so
	// a file of a million requests is never held in memory; the files of
	// one sharded run are merged into one run.
	runs, err := bench.ReadRuns(ctx, paths, false)
	if ctx.Err() != nil {
		return errInterrupted
	}
	if err != nil {
		return err
	}
	setGPUs(runs, v.gpus)
	if err := v.hw.apply(runs); err != nil {
		return err
	}
	for i, run := range runs {
		if i > 0 && format == "text" {
			fmt.Fprintln(e.stdout)
		}
		run.Percentiles, run.Wide = v.ps, v.wide
		if run.Setup.Command == "overhead" {
			// Its levels hold both routes' requests: shown apart, as the
			// overhead command showed them.
			o, err := bench.ReadOverhead(ctx, run.File)
			if err != nil {
				return err
			}
			if err := report.Render(e.stdout, format, o); err != nil {
				return err
			}
			continue
		}
		if format != "text" {
			for _, n := range report.Notes(run) {
				fmt.Fprintln(e.stderr, n) // keep machine-readable output clean
			}
		}
		if err := report.Render(e.stdout, format, run); err != nil {
			return err
		}
		for _, w := range run.Withheld() {
			*withheld = append(*withheld, run.File+": "+w)
		}
	}
	return nil
}

// compareBaseline is tokperf compare FILE --baseline NAME.
func compareBaseline(ctx context.Context, paths []string, name, file string, gpus int, gpu, claim, format string, e *env, withheld *[]string) error {
	all, err := loadBaselines(file)
	if err != nil {
		return err
	}
	b := baseline.Find(all, name)
	if b == nil {
		return usagef("no baseline %q (tokperf baselines lists them)", name)
	}
	runs, err := bench.ReadRuns(ctx, paths, false) // one run, or one sharded run's files
	if ctx.Err() != nil {
		return errInterrupted
	}
	if err != nil {
		return err
	}
	if len(runs) != 1 {
		return usagef("with --baseline, give one run: one result file, or the files of one sharded run")
	}
	res, err := analyze.AgainstBaselineRun(runs[0], b, gpus, gpu, claim)
	if err != nil {
		return usagef("%v", err)
	}
	*withheld = append(*withheld, res.Withheld()...)
	return report.Render(e.stdout, format, res)
}

// compareCmd is tokperf compare: a run against a baseline, or runs A/B.
func compareCmd(ctx context.Context, cmd string, args []string, e *env) error {
	fs := newFlags(cmd)
	name := fs.String("baseline", "", "compare one run with a published baseline (tokperf baselines lists them)")
	file := fs.String("baselines", "", "a YAML file of your own baselines")
	gpus := fs.Int("gpus", 0, "GPUs behind the run, when its file does not say")
	gpu := fs.String("gpu-type", "", "GPU type behind the run, when its file does not say (cpu: none, it ran on the CPU)")
	claim := fs.String("claim", "", "a ratio stated in words to check, e.g. 3x")
	var hw hwFlags
	hw.register(fs)
	var strict bool
	registerStrict(fs, &strict)
	var format string
	registerFormat(fs, &format)
	var cf chartFlags
	fs.StringVarP(&cf.out, "out", "o", "", "write the comparison to this file instead of stdout (a page on a terminal: next to the first file, as NAME-compare.html)")
	fs.BoolVar(&cf.force, "force", false, "replace the comparison's file (-o, or the page beside the first file) if it exists")
	pos, err := parseMixed(fs, args, e)
	if err != nil {
		return err
	}
	if err := checkFormat(format); err != nil {
		return err
	}
	if *name != "" && len(pos) == 0 {
		return usagef("with --baseline, give one result file")
	}
	if *name == "" && len(pos) < 2 {
		return usagef("give two or more result files to compare, or one with --baseline NAME")
	}
	beside := page(format) && e.tty && cf.out == ""
	if beside {
		cf.out = pageBeside(pos[0], "-compare", format)
	}
	var withheld []string
	err = cf.write(e, func(e *env) error {
		if *name != "" {
			return compareBaseline(ctx, pos, *name, *file, *gpus, *gpu, *claim, format, e, &withheld)
		}
		return compareRuns(ctx, pos, *gpus, *gpu, &hw, format, e, &withheld)
	})
	if err != nil {
		return err
	}
	if beside {
		// The terminal gets the text comparison; the page went to a file.
		if *name != "" {
			err = compareBaseline(ctx, pos, *name, *file, *gpus, *gpu, *claim, "text", e, new([]string))
		} else {
			err = compareRuns(ctx, pos, *gpus, *gpu, &hw, "text", e, new([]string))
		}
		if err != nil {
			return err
		}
		e.saidPage(cf.out, format)
	}
	return strictly(strict, withheld)
}

// compareRuns is tokperf compare A B...: each run against the first.
// The verdicts it withholds go to withheld.
func compareRuns(ctx context.Context, pos []string, gpus int, gpu string, hw *hwFlags, format string, e *env, withheld *[]string) error {
	runs, err := bench.ReadRuns(ctx, pos, true) // a sharded run's files are one run
	if ctx.Err() != nil {
		return errInterrupted
	}
	if err != nil {
		return err
	}
	if len(runs) < 2 {
		return usagef("the %d files are one run: give two or more runs to compare", len(pos))
	}
	if err := hw.apply(runs); err != nil {
		return err
	}
	res, err := analyze.Compare(runs, gpus, gpu)
	if err != nil {
		return err
	}
	*withheld = append(*withheld, res.Withheld()...)
	return report.Render(e.stdout, format, res)
}

func loadBaselines(file string) ([]baseline.Baseline, error) {
	all := baseline.Builtin()
	if file == "" {
		return all, nil
	}
	mine, err := baseline.Load(file)
	if err != nil {
		return nil, err
	}
	return append(mine, all...), nil
}

// baselinesCmd is tokperf baselines [NAME]: list or show published baselines.
func baselinesCmd(_ context.Context, cmd string, args []string, e *env) error {
	fs := newFlags(cmd)
	file := fs.String("baselines", "", "a YAML file of your own baselines, in the built-in format")
	pos, err := parseMixed(fs, args, e)
	if err != nil {
		return err
	}
	all, err := loadBaselines(*file)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tMODEL\tGPUS\tENGINE\tLEVELS")
		for _, b := range all {
			side := analyze.BaselineSide(&b)
			fmt.Fprintf(tw, "%s\t%s\t%d × %s\t%s\t%v\n", b.Name, b.Model, b.GPUs, baseline.Normalize(b.GPU), side.Engine, side.Levels)
		}
		return tw.Flush()
	}
	for _, name := range pos {
		b := baseline.Find(all, name)
		if b == nil {
			return usagef("no baseline %q (tokperf baselines lists them)", name)
		}
		s := analyze.BaselineSide(b)
		fmt.Fprintf(e.stdout, "%s\nsource: %s\n", b.Name, b.Source)
		for _, f := range []struct{ k, v string }{{"model", s.Model}, {"quantization", s.Quantization}, {"GPU", fmt.Sprintf("%d × %s", b.GPUs, b.GPU)},
			{"engine", b.Engine}, {"speculative", s.Speculative}, {"endpoint", s.Endpoint}, {"input tokens", fmt.Sprint(s.InputTokens)},
			{"output tokens", fmt.Sprint(s.OutputTokens)}, {"per GPU", fmt.Sprint(b.PerGPU)}, {"notes", b.Notes}} {
			if f.v != "" && f.v != "0" {
				fmt.Fprintf(e.stdout, "  %-14s %s\n", f.k, f.v)
			}
		}
		for _, p := range b.Points {
			fmt.Fprintf(e.stdout, "  C=%-4d %8.1f tok/s aggregate", p.Concurrency, p.AggregateTokS)
			if p.DecodeTokS > 0 {
				fmt.Fprintf(e.stdout, ", %.1f decode tok/s", p.DecodeTokS)
			}
			if p.TPOTMs > 0 {
				fmt.Fprintf(e.stdout, ", TPOT %.1f ms", p.TPOTMs)
			}
			fmt.Fprintln(e.stdout)
		}
	}
	return nil
}

// setGPUs gives each run whose file states no GPU count the count of
// --gpus (0: none given), for its per-GPU figures and charts.
func setGPUs(runs []*analyze.Run, gpus int) {
	for _, r := range runs {
		if r.Setup.GPUs == 0 && gpus > 0 {
			r.Setup.GPUs = gpus
		}
	}
}
