package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/sim"
)

// virtualStages runs a sweep's stages on the embedded simulator's engine
// in virtual time (--virtual): each stage's requests, built by the run's
// own source and numbered as the runner numbers them, are served as the
// simulator would serve them, with no network, no client and no clock, and
// their records go to the same sink and fold as a served stage's. The
// figures are then the profile's own whatever the machine's load, and a
// sweep takes seconds.
type virtualStages struct {
	v    *sim.Virtual
	r    *runner.Runner // its Source, Sink and numbering
	chat bool
	next int // the next request's index
}

// errVirtual is a load that virtual time cannot run.
var errVirtual = errors.New("--virtual runs closed-loop levels of independent requests on the embedded simulator")

// checkVirtual refuses what --virtual cannot run, before anything starts.
func checkVirtual(cfg SweepConfig) error {
	l := cfg.Load
	why := ""
	switch {
	case cfg.Target.URL != "":
		why = "not a server at --url"
	case len(l.Rates) > 0 || l.Trace != nil:
		why = "not open-loop rates or traces"
	case l.Slice > 0:
		why = "not sliced soaks"
	case cfg.Shard != nil:
		why = "not shards"
	case cfg.Live != nil:
		why = "not --live: a virtual run has no now to watch"
	case cfg.Prompts != nil && cfg.Prompts.Conversational():
		why = "not conversations"
	default:
		return nil
	}
	return &ConfigError{fmt.Errorf("%w: %s", errVirtual, why)}
}

// each runs plan p (its warm-up, then its measured requests) and hands
// every measured record to each, after the sink.
func (vs *virtualStages) each(p runner.Plan, each func(*record.Record)) error {
	if p.Warmup > 0 {
		if err := vs.phase(p, min(max(p.Concurrency, 1), p.Warmup), p.Warmup, 0, true, nil); err != nil {
			return err
		}
	}
	return vs.phase(p, p.Concurrency, p.Requests, p.Duration, false, each)
}

// phase serves n requests (0: as many as d allows), c at a time.
func (vs *virtualStages) phase(p runner.Plan, c, n int, d time.Duration, warmup bool, each func(*record.Record)) error {
	var ids []int
	var asked []record.Request
	outs, err := vs.v.Run(c, n, d, vs.chat, func(k int) sim.VirtualRequest {
		i := vs.next
		vs.next++
		req := vs.r.Source(i)
		ids, asked = append(ids, i), append(asked, req)
		vr := sim.VirtualRequest{Prompt: req.Prompt, MaxTokens: req.MaxTokens, IgnoreEOS: req.IgnoreEOS, Temperature: req.Temperature, Seed: req.Seed}
		for _, m := range req.Messages {
			vr.Messages = append(vr.Messages, [2]string{m.Role, m.Content})
		}
		return vr
	})
	for _, o := range outs {
		rec := virtualRecord(p, ids[o.Job], asked[o.Job], o)
		rec.Warmup = warmup
		if vs.r.Sink != nil {
			vs.r.Sink(rec)
		}
		if !warmup && each != nil {
			each(&rec)
		}
	}
	return err
}

// virtualRecord is what the client would have recorded of outcome o:
// sent when its slot sent it, every chunk at its delivery, the server's
// counts (the simulator's, exact), ok when it ended.
func virtualRecord(p runner.Plan, id int, req record.Request, o sim.Outcome) record.Record {
	rec := record.New(id)
	rec.Stage, rec.Concurrency, rec.Repeat = p.Index, p.Concurrency, p.Repeat
	rec.Scheduled, rec.Sent = o.Sent, o.Sent
	rec.AskedPromptTokens, rec.AskedPromptSource = req.PromptTokens, req.PromptSource
	for _, d := range o.All {
		rec.AddChunk(d.At, d.Tokens)
	}
	if o.Chunks == 0 {
		// Nothing could run it (a job larger than the KV pool): the
		// served engine refuses it with a 503.
		rec.Done, rec.Status, rec.Error = o.Sent, record.StatusHTTPError, "the simulator's KV pool cannot hold this request"
		rec.HTTPCode = 503
		return rec
	}
	rec.FirstByte, rec.FirstContent = rec.FirstToken, rec.FirstToken
	rec.Done = o.Done
	rec.OutputTokens, rec.OutputSource, rec.ChunkSource = o.Tokens, record.SourceUsage, record.SourceContinuous
	rec.PromptTokens, rec.PromptSource, rec.CachedTokens = o.PromptTokens, record.SourceUsage, o.Cached
	rec.FinishReason, rec.Status = o.Finish, record.StatusOK
	return rec
}
