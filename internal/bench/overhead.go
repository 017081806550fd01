package bench

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/workload"
)

// OverheadConfig is the raw endpoint against the chat API on one server.
type OverheadConfig struct {
	Target   Target // Endpoint is the raw side (empty: the engine's raw one)
	Workload workload.Synthetic
	Levels   []int         // concurrency levels
	Requests int           // per level, both endpoints together; 0: 2 × max(4, 2×C)
	Warmup   int           // per level; -K: K rounds
	Timeout  time.Duration // per request
	Out      string
}

// paired sends each prompt twice, through the raw endpoint and through the
// chat endpoint, one after the other and in alternating order, so drift in
// the server hits both alike.
type paired struct {
	raw, chat         *backend.Backend
	rawName, chatName string
}

// isChat says which endpoint request i goes to: pairs (2k, 2k+1) share a
// prompt, and every other pair starts with chat.
func isChat(i int) bool { return (i%2 == 1) != ((i/2)%2 == 1) }

func (p *paired) Do(ctx context.Context, clock record.Clock, req record.Request, rec *record.Record) {
	if isChat(rec.ID) {
		rec.Endpoint = p.chatName
		p.chat.Do(ctx, clock, req, rec)
		return
	}
	rec.Endpoint = p.rawName
	p.raw.Do(ctx, clock, req, rec)
}

// Overhead sends the same prompts through the raw generation endpoint and
// the chat API, interleaved request by request, and compares them level by
// level (analyze.OverheadOf).
func Overhead(ctx context.Context, cfg OverheadConfig, env *Env) (*analyze.Overhead, error) {
	maxC := 1
	for _, c := range cfg.Levels {
		maxC = max(maxC, c)
	}
	sess, err := Connect(ctx, "overhead", cfg.Target, env)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	setup := sess.Setup
	wl := cfg.Workload
	setup.Workload = record.Workload{InputTokens: wl.InputTokens, OutputTokens: wl.OutputTokens, IgnoreEOS: wl.IgnoreEOS, Seed: wl.Seed, SharedPrefix: wl.SharedPrefix}
	setup.Sampling = record.Sampling{Temperature: wl.Temperature}
	raw, err := sess.Backend(ctx, setup.Endpoint, maxC)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	chat, err := sess.Backend(ctx, "chat", maxC)
	if err != nil {
		return nil, err
	}
	defer chat.Close()
	setup.Route, setup.Client = raw.Route(), raw.Client()
	setup.Load = record.Load{Concurrency: cfg.Levels, Requests: cfg.Requests, Warmup: cfg.Warmup, TimeoutS: cfg.Timeout.Seconds()}
	clock := record.NewClock()
	out, w, err := create(cfg.Out, "overhead", setup, clock, env.force())
	if err != nil {
		return nil, err
	}
	file := &sink{w: w, warn: env.progress()}
	r := &runner.Runner{
		Backend: &paired{raw: raw, chat: chat, rawName: raw.Route(), chatName: chat.Route()},
		Source:  func(i int) record.Request { return wl.Request(i / 2) },
		Clock:   clock,
		Sink:    file.write,
	}
	progress := env.progress()
	env.started(setup)
	fmt.Fprintf(progress, "overhead: %s against %s, each prompt through both, interleaved\n", chat.Route(), raw.Route())
	res := &analyze.Overhead{Schema: analyze.OverheadSchema, File: out, Setup: setup, RawRoute: raw.Route(), ChatRoute: chat.Route()}
	for i, c := range cfg.Levels {
		n := cfg.Requests
		if n == 0 {
			n = 2 * max(4, 2*c)
		}
		warm := cfg.Warmup
		if warm < 0 {
			warm = -warm * c // rounds
		}
		warm += warm % 2 // keep the pairs aligned
		n += n % 2
		fmt.Fprintf(progress, "C=%d: %d warm-up, then %s (half each) ...\n", c, warm, record.Plural(n, "request"))
		recs := r.Stage(ctx, runner.Plan{Index: i, Concurrency: c, Requests: n, Warmup: warm, Timeout: cfg.Timeout})
		res.Levels = append(res.Levels, analyze.OverheadOf(c, recs, chat.Route()))
		if ctx.Err() != nil {
			break
		}
	}
	if err := file.close(ctx.Err() != nil); err != nil {
		return nil, err
	}
	return res, nil
}

// ReadOverhead reads an overhead result file into the model its run
// printed: each level's raw and chat requests apart, as the two routes
// they were, never folded into one row under the raw route's name.
func ReadOverhead(ctx context.Context, path string) (*analyze.Overhead, error) {
	r, f, err := results.OpenContext(ctx, path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byStage := map[int][]record.Record{}
	for r.Next() {
		if rec := r.Record(); !rec.Warmup { // as Stage returns them to the live run
			byStage[rec.Stage] = append(byStage[rec.Stage], rec)
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	h := r.Header()
	if h == nil {
		return nil, fmt.Errorf("%s: no header", path)
	}
	res := &analyze.Overhead{Schema: analyze.OverheadSchema, File: path, Setup: h.Setup, RawRoute: h.Setup.Route}
	for _, recs := range byStage {
		for _, rec := range recs {
			if rec.Endpoint != "" && rec.Endpoint != res.RawRoute {
				res.ChatRoute = rec.Endpoint
			}
		}
	}
	for _, i := range slices.Sorted(maps.Keys(byStage)) {
		recs := byStage[i]
		res.Levels = append(res.Levels, analyze.OverheadOf(recs[0].Concurrency, recs, res.ChatRoute))
	}
	return res, nil
}
