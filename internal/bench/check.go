package bench

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/check"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/runner"
)

// CheckConfig is a smoke and accuracy check.
type CheckConfig struct {
	Target      Target
	Items       []check.Item // check.Items, plus the user's eval
	Concurrency int          // requests in flight (correctness under load)
	MaxTokens   int          // per answer
	MinAccuracy float64      // fail below this share of correct answers
	Seed        int64
	// Against is another server's URL, or an earlier check's result file
	// (.jsonl), whose greedy outputs are compared with these.
	Against string
	Out     string
}

// Check sends every item at temperature 0 and judges the outputs; the
// result says whether the configuration passed.
func Check(ctx context.Context, cfg CheckConfig, env *Env) (*check.Result, error) {
	cfg.Target.KeepText = true
	// --against is read or checked before the check runs, not after it.
	other, err := savedAnswers(cfg)
	if err != nil {
		return nil, err
	}
	recs, setup, out, err := answers(ctx, cfg, env)
	if err != nil {
		return nil, err
	}
	if other == nil && cfg.Against != "" {
		g := cfg
		g.Target.URL, g.Out = cfg.Against, os.DevNull
		theirs, _, _, err := answers(ctx, g, env)
		if err != nil {
			return nil, fmt.Errorf("--against: %w", err)
		}
		other = make([]string, len(theirs))
		for i := range theirs {
			other[i] = theirs[i].Text
		}
	}
	res := check.Judge(cfg.Items, recs, other, cfg.MinAccuracy)
	res.File, res.Setup = out, setup
	return &res, nil
}

// savedAnswers are the outputs of an earlier check whose result file
// --against names, by item; nil for a server's URL, which it checks.
func savedAnswers(cfg CheckConfig) ([]string, error) {
	if cfg.Against == "" {
		return nil, nil
	}
	if !strings.HasSuffix(cfg.Against, ".jsonl") {
		if u, err := url.Parse(cfg.Against); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, configErr("--against %q: want another server's http(s) URL or an earlier check's result file (.jsonl)", cfg.Against)
		}
		return nil, nil
	}
	_, saved, _, err := results.ReadAll(cfg.Against)
	if err != nil {
		return nil, fmt.Errorf("--against: %w", err)
	}
	other := make([]string, len(cfg.Items))
	for _, r := range saved {
		if r.ID >= 0 && r.ID < len(cfg.Items) {
			other[r.ID] = r.Text
		}
	}
	return other, nil
}

// answers sends the items and returns their records by item index.
func answers(ctx context.Context, cfg CheckConfig, env *Env) ([]record.Record, record.Setup, string, error) {
	sess, err := Connect(ctx, "check", cfg.Target, env)
	if err != nil {
		return nil, record.Setup{}, "", err
	}
	defer sess.Close()
	b, err := sess.Backend(ctx, sess.Setup.Endpoint, cfg.Concurrency)
	if err != nil {
		return nil, record.Setup{}, "", err
	}
	defer b.Close()
	setup := sess.Setup
	setup.Route, setup.Client = b.Route(), b.Client()
	setup.Workload = record.Workload{OutputTokens: cfg.MaxTokens, Seed: cfg.Seed}
	setup.Load = record.Load{Concurrency: []int{cfg.Concurrency}, Requests: len(cfg.Items)}
	clock := record.NewClock()
	out, w, err := create(cfg.Out, "check", setup, clock, env.force())
	if err != nil {
		return nil, record.Setup{}, "", err
	}
	file := &sink{w: w, warn: env.progress()}
	items := cfg.Items
	r := &runner.Runner{
		Backend: b, Clock: clock, Sink: file.write,
		Source: func(i int) record.Request {
			it := items[i%len(items)]
			return record.Request{Prompt: it.Prompt, Tools: it.Tools, MaxTokens: cfg.MaxTokens, Temperature: 0}
		},
	}
	recs := r.Stage(ctx, runner.Plan{Concurrency: cfg.Concurrency, Requests: len(items), Timeout: 5 * time.Minute})
	if err := file.close(ctx.Err() != nil); err != nil {
		return nil, record.Setup{}, "", err
	}
	if cfg.Out != os.DevNull {
		fmt.Fprintf(env.progress(), "outputs: %s\n", out)
	}
	byID := make([]record.Record, len(items))
	for _, rec := range recs {
		if rec.ID >= 0 && rec.ID < len(items) {
			byID[rec.ID] = rec
		}
	}
	return byID, setup, out, ctx.Err()
}
