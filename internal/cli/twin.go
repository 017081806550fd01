package cli

import (
	"context"
	"time"

	"github.com/tokperf/tokperf/internal/baseline"
	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/report"
)

// twinFlags are fit's and predict's flags.
type twinFlags struct {
	cfg               bench.TwinConfig
	format            string
	fitLevels, levels ints
	ttft, tpot, e2e   time.Duration
	base, baseFile    string
}

func (f *twinFlags) register(fs *flagSet, cmd string) {
	fs.group("Fit")
	fs.Var(&f.fitLevels, "fit-levels", "fit to these of the run's levels only (e.g. 1,4,16); the others are held out, and a prediction at one is set beside what it measured")
	fs.StringVar(&f.base, "baseline", "", "fit to a published baseline's table instead of a result file (tokperf baselines lists them)")
	fs.StringVar(&f.baseFile, "baselines", "", "a YAML file of your own baselines, in the built-in format")
	fs.StringVarP(&f.cfg.ProfileOut, "out", "o", "", "write the fitted simulator profile here (YAML; tokperf sim --profile FILE serves it)")
	if cmd == "predict" {
		fs.group("Predict")
		fs.VarP(&f.levels, "concurrency", "c", "predict these concurrency levels, e.g. 48,64,128")
		fs.IntVar(&f.cfg.Requests, "requests", 0, "measured requests per predicted level (default max(100, 4×C); a baseline's: as its largest level was sized)")
		fs.DurationVar(&f.ttft, "slo-ttft", 0, "with an SLO: the highest level at which 90% of requests meet it")
		fs.DurationVar(&f.tpot, "slo-tpot", 0, "TPOT at most this")
		fs.DurationVar(&f.e2e, "slo-e2e", 0, "E2E latency at most this")
		fs.IntVar(&f.cfg.MaxConc, "max-concurrency", 1024, "the highest level the SLO search tries")
	}
	fs.group("Output")
	registerFormat(fs, &f.format)
}

// twinCmd is tokperf fit and tokperf predict: a digital twin of a result
// file (or a baseline's table), its profile, and its figures at levels
// not run.
func twinCmd(ctx context.Context, cmd string, args []string, e *env) error {
	fs := newFlags(cmd)
	var f twinFlags
	f.register(fs, cmd)
	paths, err := parseMixed(fs, args, e)
	if err != nil {
		return err
	}
	if err := f.check(cmd, paths); err != nil {
		return err
	}
	if page(f.format) && e.tty {
		return pageOnTerminal(cmd, f.format)
	}
	cfg := f.cfg
	if len(paths) == 1 {
		cfg.Path = paths[0]
	}
	cfg.FitLevels, cfg.Levels = f.fitLevels, f.levels
	cfg.SLO = record.SLO{TTFTMs: record.Ms(f.ttft), TPOTMs: record.Ms(f.tpot), E2EMs: record.Ms(f.e2e)}
	if f.base != "" {
		all, err := loadBaselines(f.baseFile)
		if err != nil {
			return err
		}
		if cfg.Baseline = baseline.Find(all, f.base); cfg.Baseline == nil {
			return usagef("no baseline %q (tokperf baselines lists them)", f.base)
		}
	}
	m, err := bench.Twin(ctx, cfg)
	if err != nil {
		return err
	}
	return report.Render(e.stdout, f.format, m)
}

func (f *twinFlags) check(cmd string, paths []string) error {
	switch {
	case f.base == "" && len(paths) != 1, f.base != "" && len(paths) != 0:
		return usagef("want: tokperf %s RESULT.jsonl, or tokperf %s --baseline NAME", cmd, cmd)
	case cmd == "predict" && len(f.levels) == 0 && f.ttft == 0 && f.tpot == 0 && f.e2e == 0:
		return usagef("give the levels to predict (-c 48,64) or an SLO (--slo-ttft 2s)")
	case f.ttft < 0 || f.tpot < 0 || f.e2e < 0 || f.cfg.Requests < 0 || (cmd == "predict" && f.cfg.MaxConc < 1):
		return usagef("SLOs, --requests and --max-concurrency must be positive")
	}
	if err := eachWithin("-c", f.levels, 1, maxPredict); err != nil {
		return err
	}
	if err := within("--requests", f.cfg.Requests, 0, maxPredictReqs); err != nil {
		return err
	}
	if cmd == "predict" {
		if err := within("--max-concurrency", f.cfg.MaxConc, 1, maxPredict); err != nil {
			return err
		}
	}
	return checkFormat(f.format)
}
