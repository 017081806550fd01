package cli

import (
	"context"
	"flag"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/check"
)

// checkCmd is tokperf check: smoke and accuracy checks that need no download.
func checkCmd(ctx context.Context, cmd string, args []string, e *env) error {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	var f targetFlags
	f.register(fs)
	out := fs.String("out", "", "result file with every output (default ./tokperf-results/TIMESTAMP-check.jsonl)")
	fs.StringVar(out, "o", "", "shorthand for --out")
	var format string
	registerFormat(fs, &format)
	seed := fs.Int64("seed", 1, "seed of the question set")
	conc := fs.Int("c", bench.DefaultCheckConc, "requests in flight (correctness under load)")
	n := fs.Int("questions", 40, "exact-answer questions")
	maxTokens := fs.Int("max-tokens", bench.DefaultMaxTokens, "output tokens per answer at most")
	minAcc := fs.Float64("min-accuracy", 0.9, "fail below this share of correct answers")
	against := fs.String("against", "", "another server's URL, or an earlier check's result file (.jsonl): compare greedy outputs")
	evalFile := fs.String("eval", "", "your own questions: JSON Lines of {prompt, expected} or {prompt, regex}")
	if err := parse(fs, args, e); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	f.warn(e)
	if err := checkFormat(format); err != nil {
		return err
	}
	if *conc < 1 || *n < 0 || *maxTokens < 1 || *minAcc < 0 || *minAcc > 1 {
		return usagef("-c and --max-tokens must be positive, --questions not negative, --min-accuracy in [0, 1]")
	}
	items := check.Items(*seed, *n)
	if *evalFile != "" {
		ev, err := check.ReadEval(*evalFile)
		if err != nil {
			return err
		}
		items = append(items, ev...)
	}
	res, err := bench.Check(ctx, bench.CheckConfig{Target: f.target(), Items: items, Concurrency: *conc, MaxTokens: *maxTokens,
		MinAccuracy: *minAcc, Seed: *seed, Against: *against, Out: *out}, e.progress(nil))
	if ctx.Err() != nil {
		return errInterrupted
	}
	if err != nil {
		return err
	}
	if err := e.render(format, res, ""); err != nil {
		return err
	}
	if !res.Passed {
		return errCheckFailed
	}
	return nil
}
