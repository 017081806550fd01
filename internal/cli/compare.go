package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/baseline"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/report"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/summary"
)

// parseMixed parses flags that may come after positional arguments
// ("compare run.jsonl --baseline x") and returns the positionals.
func parseMixed(fs *flag.FlagSet, args []string, e *env) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(e.stdout, "Usage: tokperf %s [flags] ARGS...\n\nFlags:\n", fs.Name())
				fs.SetOutput(e.stdout)
				fs.PrintDefaults()
				return nil, errHelp
			}
			return nil, usagef("%v", err)
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
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
func baselinesCmd(args []string, e *env) error {
	fs := flag.NewFlagSet("baselines", flag.ContinueOnError)
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

type savedRun struct {
	path   string
	setup  record.Setup
	levels *analyze.Levels
}

// readRun folds a result file into its levels as it reads, so comparing
// runs of a million requests does not hold their records.
func readRun(path string) (savedRun, error) {
	r, f, err := results.Open(path)
	if err != nil {
		return savedRun{}, err
	}
	defer f.Close()
	lv := analyze.NewLevels()
	for r.Next() {
		rec := r.Record()
		lv.Add(&rec)
	}
	if err := r.Err(); err != nil {
		return savedRun{}, err
	}
	return savedRun{path: path, setup: r.Header().Setup, levels: lv}, nil
}

func (r savedRun) stages() []summary.Stage {
	var out []summary.Stage
	for _, c := range r.levels.Concurrencies() {
		out = append(out, r.levels.At(c).Stage)
	}
	return out
}

// compareCmd is tokperf compare: a run against a baseline, or runs A/B.
func compareCmd(args []string, e *env) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	name := fs.String("baseline", "", "compare one run with a published baseline (tokperf baselines lists them)")
	file := fs.String("baselines", "", "a YAML file of your own baselines")
	gpus := fs.Int("gpus", 0, "GPUs behind the run, when its file does not say")
	gpu := fs.String("gpu-type", "", "GPU type behind the run, when its file does not say")
	claim := fs.String("claim", "", "a ratio stated in words to check, e.g. 3x")
	pos, err := parseMixed(fs, args, e)
	if err != nil {
		return err
	}
	if *name != "" {
		if len(pos) != 1 {
			return usagef("with --baseline, give one result file")
		}
		all, err := loadBaselines(*file)
		if err != nil {
			return err
		}
		b := baseline.Find(all, *name)
		if b == nil {
			return usagef("no baseline %q (tokperf baselines lists them)", *name)
		}
		r, err := readRun(pos[0])
		if err != nil {
			return err
		}
		side := analyze.RunSide(r.path, r.setup, *gpus, *gpu)
		ratios := analyze.AgainstBaseline(r.stages(), side, b)
		fields, verdict := analyze.Fairness(side, analyze.BaselineSide(b))
		var claimLine string
		if *claim != "" {
			if claimLine, err = analyze.Claim(*claim, ratios); err != nil {
				return usagef("%v", err)
			}
		}
		report.Baseline(e.stdout, side, b, ratios, fields, verdict, claimLine)
		return nil
	}
	if len(pos) < 2 {
		return usagef("give two or more result files to compare, or one with --baseline NAME")
	}
	var runs []savedRun
	for _, p := range pos {
		r, err := readRun(p)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	metrics := map[int][][]analyze.Metric{}
	var levels []int
	for _, c := range runs[0].levels.Concurrencies() {
		row := [][]analyze.Metric{}
		for _, r := range runs[1:] {
			b := r.levels.At(c)
			if b == nil {
				row = nil
				break
			}
			row = append(row, analyze.Pair(runs[0].levels.At(c), b, c))
		}
		if row != nil {
			levels = append(levels, c)
			metrics[c] = row
		}
	}
	if len(levels) == 0 {
		return fmt.Errorf("the files share no concurrency level")
	}
	var names []string
	for _, r := range runs {
		names = append(names, r.path)
	}
	report.Pairs(e.stdout, names, levels, metrics)
	for i, r := range runs[1:] {
		fields, verdict := analyze.Fairness(analyze.RunSide("A", runs[0].setup, *gpus, *gpu), analyze.RunSide("B", r.setup, *gpus, *gpu))
		if len(runs) > 2 {
			fmt.Fprintf(e.stdout, "B = %s:\n", names[i+1])
		}
		report.Fields(e.stdout, "A", "B", fields, verdict)
	}
	return nil
}
