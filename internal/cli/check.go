package cli

import (
	"context"
	"strconv"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/check"
)

// checkCmd is tokperf check: smoke and accuracy checks that need no download.
func checkCmd(ctx context.Context, cmd string, args []string, e *env) error {
	fs := newFlags(cmd)
	var f targetFlags
	f.register(fs)
	out := fs.StringP("out", "o", "", "result file with every output (default ./tokperf-results/TIMESTAMP-check.jsonl)")
	registerForce(fs, &e.bench.Force)
	var format string
	registerFormat(fs, &format)
	seed := fs.Int64("seed", 1, "seed of the question set")
	var conc ints
	conc.Set(strconv.Itoa(bench.DefaultCheckConc))
	fs.VarP(&conc, "concurrency", "c", "requests in flight (correctness under load; one level)")
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
	if page(format) && e.tty {
		return pageOnTerminal(cmd, format) // no result file to sit beside
	}
	if len(conc) != 1 {
		return usagef("check runs at one level: give one -c value")
	}
	if err := checkCounts(*n, *maxTokens, *minAcc); err != nil {
		return err
	}
	items := check.Items(*seed, *n)
	if *evalFile != "" {
		ev, err := check.ReadEval(*evalFile)
		if err != nil {
			return err
		}
		items = append(items, ev...)
	}
	res, err := bench.Check(ctx, bench.CheckConfig{Target: f.target(), Items: items, Concurrency: conc[0], MaxTokens: *maxTokens,
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

// checkCounts holds check's counts and share to their ranges.
func checkCounts(questions, maxTokens int, minAcc float64) error {
	if questions < 0 || maxTokens < 1 || minAcc < 0 || minAcc > 1 {
		return usagef("-c and --max-tokens must be positive, --questions not negative, --min-accuracy in [0, 1]")
	}
	if err := within("--questions", questions, 0, maxQuestions); err != nil {
		return err
	}
	return within("--max-tokens", maxTokens, 1, maxOutTokens)
}
