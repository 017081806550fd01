// Package twin fits the embedded simulator to a measured closed-loop sweep
// and predicts the levels it did not run: a digital twin of the deployment
// (docs/METRICS.md §10).
//
// The twin is the simulator's own scheduler (sim.Simulate), run in virtual
// time over the run's own requests: each measured level is replayed with
// its requests' prompt and output lengths, in their order, at its
// concurrency, and the profile's parameters (the decode step time at each
// level's batch, the prefill cost, each request's own overhead) are moved
// until the replay's figures, computed by the same summary code as the
// measured ones, match them. Parameters the figures do not move are said
// to be not pinned down.
//
//	in := twin.Input{Setup: h.Setup, Stages: run.Stages, Requests: reqs}
//	f, err := twin.Fit(in)
//	p, err := f.Predict([]int{48, 64}, twin.Options{})
package twin

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// Request is what the twin needs of one measured request.
type Request struct {
	Stage  int
	ID     int
	Warmup bool
	OK     bool
	Prompt int // prompt tokens (the server's count, else the workload's)
	Output int // output tokens
	// Chunk shape between the first and the last chunk: how many such
	// chunks, their tokens in all, the fewest and the most in one.
	MidChunks, MidTokens, MidMin, MidMax int
	// Per-request figures for the measured figures' spread (0: none).
	TTFTMs, DecodeTokS, RequestTokS float64
	Stopped                         bool // ended on EOS (finish "stop")
}

// FromRecord is the twin's view of a record.
func FromRecord(r *record.Record) Request {
	q := Request{Stage: r.Stage, ID: r.ID, Warmup: r.Warmup, OK: r.OK(), Prompt: r.PromptTokens, Output: r.OutputTokens}
	if q.Prompt <= 0 {
		q.Prompt = r.AskedPromptTokens
	}
	if n := len(r.Chunks); n > 2 {
		q.MidMin = math.MaxInt
		for _, c := range r.Chunks[1 : n-1] {
			q.MidChunks++
			q.MidTokens += c.Tokens
			q.MidMin, q.MidMax = min(q.MidMin, c.Tokens), max(q.MidMax, c.Tokens)
		}
	}
	if d, ok := r.TTFT(); ok {
		q.TTFTMs = record.Ms(d)
	}
	q.Stopped = r.FinishReason == "stop"
	q.DecodeTokS, _ = r.DecodeTokS()
	q.RequestTokS, _ = r.RequestTokS()
	return q
}

// Input is a run as the twin reads it: its setup, its stages' measured
// figures (as the report computed them) and its requests.
type Input struct {
	File     string
	Setup    record.Setup
	Stages   []analyze.Stage
	Requests []Request
	// Only, when set, fits these levels (concurrencies) alone; the run's
	// other levels are held out, and a prediction at one of them is set
	// beside what it measured.
	Only []int
	// Spread, when set, is every figure's relative spread (a table's,
	// which has no requests to take it from); Notes what the input
	// assumed.
	Spread float64
	Notes  []string
}

// level is one measured closed-loop stage.
type level struct {
	stage int
	c     int
	warm  []sim.Job
	jobs  []sim.Job
	limit time.Duration // no measured request starts after it (0: none)
	slo   record.SLO    // goodput is counted against it
	got   summary.Stage
	srv   *analyze.ServerReading // nil without /metrics
	reqs  []Request              // measured, ok
}

// levels gathers the closed-loop stages with finished requests, sorted by
// concurrency, and the run's maximum output length.
func levels(in Input) ([]level, error) {
	if in.Setup.Load.Rate > 0 || len(in.Setup.Load.Rates) > 0 || in.Setup.Load.Trace != "" {
		return nil, fmt.Errorf("the twin is fitted to closed-loop levels (-c); this run is open loop")
	}
	if in.Setup.Command == "overhead" {
		return nil, fmt.Errorf("this run paired the raw and chat routes request by request (tokperf overhead): the twin replays one route; fit a sweep of either")
	}
	if in.Setup.Workload.Conversations {
		return nil, fmt.Errorf("the twin replays independent requests; this run sent conversations")
	}
	byStage := map[int][]Request{}
	for _, r := range in.Requests {
		byStage[r.Stage] = append(byStage[r.Stage], r)
	}
	maxOut := in.Setup.Workload.OutputTokens
	var out []level
	for i := range in.Stages {
		st := &in.Stages[i]
		reqs := byStage[st.Index]
		if st.Concurrency <= 0 || st.OK == 0 || st.Repeat > 0 || (len(in.Only) > 0 && !slices.Contains(in.Only, st.Concurrency)) {
			continue
		}
		slices.SortFunc(reqs, func(a, b Request) int { return cmp.Compare(a.ID, b.ID) })
		l := level{stage: st.Index, c: st.Concurrency, got: st.Stage, srv: st.Server}
		for _, r := range reqs {
			maxOut = max(maxOut, r.Output)
			j := sim.Job{PromptTokens: max(r.Prompt, 1), MaxTokens: max(r.Output, 1), Length: max(r.Output, 1)}
			if r.Warmup {
				l.warm = append(l.warm, j)
				continue
			}
			l.jobs = append(l.jobs, j)
			if r.OK {
				l.reqs = append(l.reqs, r)
			}
		}
		out = append(out, l)
	}
	if len(out) == 0 {
		if len(in.Only) > 0 {
			return nil, fmt.Errorf("none of the levels %v is a closed-loop level of the run that finished a request", in.Only)
		}
		return nil, fmt.Errorf("no closed-loop level finished a request: nothing to fit")
	}
	// Requests asked for up to the workload's maximum: they hold its KV.
	for i := range out {
		for _, js := range [][]sim.Job{out[i].warm, out[i].jobs} {
			for k := range js {
				js[k].MaxTokens = max(js[k].MaxTokens, maxOut)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b level) int { return cmp.Compare(a.c, b.c) })
	return out, nil
}

// replay runs one level's requests through the profile and returns the
// stage the client would have measured.
func replay(p *sim.Profile, l *level, chat bool) summary.Stage {
	var phases []sim.Phase
	if len(l.warm) > 0 {
		phases = append(phases, sim.Phase{Concurrency: min(l.c, len(l.warm)), Jobs: l.warm, Chat: chat})
	}
	phases = append(phases, sim.Phase{Concurrency: l.c, Jobs: l.jobs, Limit: l.limit, Chat: chat})
	outs := sim.Simulate(p, phases...)
	return stageOf(outs[len(outs)-1], l.jobs, l.c, l.slo)
}

// stageOf turns simulated outcomes into records and the figures the
// twin matches and predicts, each computed by the records' own methods
// exactly as summary does (a record keeps its first and last chunk only:
// TTFT, decode, E2E and the window need no more), and goodput under slo.
func stageOf(outs []sim.Outcome, jobs []sim.Job, c int, slo record.SLO) summary.Stage {
	var st summary.Stage
	st.Concurrency = c
	first, last := time.Duration(math.MaxInt64), time.Duration(0)
	var ttft, decode, reqTokS, tpot, e2e []float64
	for i, o := range outs {
		st.Requests++
		if o.Chunks == 0 {
			continue
		}
		r := record.New(i)
		r.Concurrency = c
		r.Scheduled, r.Sent, r.Done = o.Sent, o.Sent, o.Done
		r.PromptTokens = jobs[o.Job].PromptTokens
		r.AddChunk(o.First.At, o.First.Tokens)
		if o.Chunks > 1 {
			r.AddChunk(o.Last.At, o.Last.Tokens)
		}
		r.FirstByte, r.FirstContent = r.FirstToken, r.FirstToken
		r.OutputTokens = o.Tokens
		r.OutputSource, r.ChunkSource, r.Status = record.SourceUsage, record.SourceContinuous, record.StatusOK
		st.OK++
		st.OutputTokens += r.OutputTokens
		st.PromptTokens += r.PromptTokens
		first, last = min(first, r.Sent), max(last, r.Done)
		if d, ok := r.TTFT(); ok {
			ttft = append(ttft, record.Ms(d))
		}
		if v, ok := r.DecodeTokS(); ok {
			decode = append(decode, v)
		}
		if v, ok := r.TPOT(); ok {
			tpot = append(tpot, v)
		}
		if v, ok := r.RequestTokS(); ok {
			reqTokS = append(reqTokS, v)
		}
		if d, ok := r.E2E(); ok {
			e2e = append(e2e, record.Ms(d))
		}
		if slo.Set() && slo.Met(&r) {
			st.SLOMet++
		}
	}
	if st.OK > 0 && last > first {
		st.WallS = (last - first).Seconds()
		st.AggregateTokS = float64(st.OutputTokens) / st.WallS
		st.RequestsPerS = float64(st.OK) / st.WallS
	}
	st.TTFT, st.DecodeTokS, st.TPOT = stats.Describe(ttft), stats.Describe(decode), stats.Describe(tpot)
	st.RequestTokS, st.E2E = stats.Describe(reqTokS), stats.Describe(e2e)
	return st
}
