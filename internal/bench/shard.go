package bench

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"time"

	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/schedule"
)

// Shard makes a run or a sweep one shard of a run split across processes
// (--shard I/N): it sends its share of each stage, with request ids of its
// own, and starts each stage's measured requests together with the other
// shards, at StartAt and through the barrier directory.
type Shard struct {
	Index, Count int
	// RunID names the run in every shard's header and in the barrier
	// directory; empty: derived from StartAt (see DefaultRunID).
	RunID string
	// StartAt, when set, is when the first stage's measured requests
	// start, on the server's clock as this shard estimates it.
	StartAt time.Time
	// Barrier is a directory all shards share (a ReadWriteMany volume, a
	// Slurm job's shared directory): each stage starts once every shard
	// has announced itself there. Empty: no barrier (StartAt then times
	// the one stage there may be).
	Barrier string
	// BarrierTimeout is how long a shard waits for the others at a
	// stage (0: DefaultBarrierTimeout); Lead is how far ahead shard 0
	// plans a stage's start once all are there (0: DefaultBarrierLead).
	BarrierTimeout, Lead time.Duration
	// ClockURL is where the clock offset is read from (any HTTP server's
	// Date header); empty: the target's /v1/models.
	ClockURL string
}

// DefaultBarrierTimeout is how long a shard waits at a barrier by default:
// long enough for a cluster to schedule pods and pull an image.
const DefaultBarrierTimeout = 10 * time.Minute

// DefaultBarrierLead is how far ahead shard 0 plans a stage's start once
// every shard is at the barrier: time for the others, polling a shared
// file system, to read the plan.
const DefaultBarrierLead = 2 * time.Second

// DefaultRunID is the run id shards agree on without --run-id: one
// derived from --start-at, which every shard is given alike.
func DefaultRunID(startAt time.Time) string {
	if startAt.IsZero() {
		return ""
	}
	return "start-" + startAt.UTC().Format("20060102T150405Z")
}

// ShardSeed is a sharded run's seed when none was given: one of the run
// id's, so that the shards agree on it.
func ShardSeed(runID string) int64 {
	h := fnv.New64a()
	h.Write([]byte(runID))
	return int64(h.Sum64()&(1<<53-1) | 1)
}

// share is shard i's share of n split over count as evenly as possible:
// the first n mod count shards take one more (10 over 4: 3, 3, 2, 2).
func share(n, i, count int) int {
	if n <= 0 {
		return 0
	}
	s := n / count
	if i < n%count {
		s++
	}
	return s
}

// byShare is shard i's part of n in proportion to its share of c (split
// over count by share): the parts sum to n.
func byShare(n, i, count, c int) int {
	if n <= 0 || c <= 0 {
		return share(n, i, count)
	}
	below := 0 // the slots of the shards before i
	for k := range i {
		below += share(c, k, count)
	}
	upTo := below + share(c, i, count)
	return n*upTo/c - n*below/c
}

// split is this shard's share of stage p, and the record of it.
func (s *Shard) split(p runner.Plan) (runner.Plan, record.ShardStage) {
	i, n := s.Index, s.Count
	rec := record.ShardStage{Stage: p.Index, Concurrency: p.Concurrency, Rate: p.Rate, Requests: p.Requests, Warmup: p.Warmup}
	q := p
	q.Warmup = share(p.Warmup, i, n)
	switch {
	case p.At != nil:
		// A trace is split by request: request k goes to shard k mod N,
		// and runner gives this shard's j-th request the index j*N+i = k.
		q.At = nil
		for k := i; k < len(p.At); k += n {
			q.At = append(q.At, p.At[k])
		}
		if q.At == nil {
			q.At = []time.Duration{}
		}
		q.Requests, q.Rate = len(q.At), p.Rate/float64(n)
		q.Concurrency = share(p.Concurrency, i, n)
		if p.Concurrency > 0 && q.Concurrency == 0 {
			q.Concurrency = 1 // a cap is never none
		}
	case p.Rate > 0:
		// Each shard its own stream at rate/N, seeded apart: N Poisson
		// streams of rate/N are one of the rate; constant arrivals are
		// phased to fall between the other shards'.
		q.Rate = p.Rate / float64(n)
		q.Requests = share(p.Requests, i, n)
		q.Seed = p.Seed + int64(i)*1_000_003
		q.Concurrency = share(p.Concurrency, i, n)
		if p.Concurrency > 0 && q.Concurrency == 0 {
			q.Concurrency = 1
		}
		if p.Arrival == schedule.Constant {
			q.Phase = time.Duration(float64(i) / p.Rate * float64(time.Second))
		} else if i > 0 {
			q.Phase = time.Duration(rand.New(rand.NewPCG(uint64(q.Seed), 0xa77f)).ExpFloat64() / q.Rate * float64(time.Second))
		}
	default:
		// Requests (and warm-up) go with the slots: a shard of 3 of C=10's
		// slots sends 3/10 of them, so every slot sends about as many as
		// in one process and no shard drains alone at the end.
		q.Concurrency = share(p.Concurrency, i, n)
		q.Requests = byShare(p.Requests, i, n, p.Concurrency)
		q.Warmup = byShare(p.Warmup, i, n, p.Concurrency)
	}
	rec.MyConcurrency, rec.MyRate, rec.MyRequests, rec.MyWarmup = q.Concurrency, q.Rate, q.Requests, q.Warmup
	// A share of nothing: no slot at a closed-loop level, no request of a
	// stage of counted requests, no request of a trace.
	rec.Idle = (p.Rate == 0 && p.At == nil && q.Concurrency == 0) || (p.Requests > 0 && q.Requests == 0) || (p.At != nil && len(q.At) == 0)
	return q, rec
}

// Check refuses what a shard cannot do with cfg, as Sweep would before it
// connects: for the commands a manifest generates, checked where they are
// written.
func (s *Shard) Check(cfg *SweepConfig) error { return s.check(cfg) }

// check refuses what a shard cannot do.
func (s *Shard) check(cfg *SweepConfig) error {
	switch {
	case s.Count < 1 || s.Index < 0 || s.Index >= s.Count:
		return configErr("--shard %d/%d: want I/N with 0 <= I < N", s.Index, s.Count)
	case s.RunID == "":
		return configErr("--shard: give --run-id (or --start-at, from which one is derived) so the shards of one run agree on it")
	case cfg.Target.URL == "":
		return configErr("--shard needs --url: each shard would otherwise start an embedded simulator of its own, not share one server")
	case cfg.Load.UntilSaturated:
		return configErr("--shard does not mix with --until-saturated: each shard would choose its next level from its own share")
	case cfg.Load.Slice > 0:
		return configErr("--shard does not mix with --slice: a slice's figures are not merged across shards")
	case s.Barrier == "" && len(cfg.Load.Plans()) > 1 && s.Count > 1:
		return configErr("--shard with %d stages needs --barrier DIR: a stage's length is not known ahead, so only a barrier starts each stage together", len(cfg.Load.Plans()))
	case s.Barrier == "" && s.StartAt.IsZero() && s.Count > 1:
		return configErr("--shard needs --start-at TIME or --barrier DIR so the shards start together")
	}
	return nil
}

// label is how progress lines name the shard.
func (s *Shard) label() string { return fmt.Sprintf("shard %d/%d", s.Index, s.Count) }

// plans are this shard's share of every stage, and the record of them.
func (s *Shard) plans(all []runner.Plan) ([]runner.Plan, []record.ShardStage) {
	out := make([]runner.Plan, len(all))
	shares := make([]record.ShardStage, len(all))
	for i, p := range all {
		out[i], shares[i] = s.split(p)
	}
	return out, shares
}

// start estimates the clock offset against the server (or ClockURL) and
// returns the header's record of the shard and its barrier.
func (s *Shard) start(ctx context.Context, sess *Session, shares []record.ShardStage, progress io.Writer) (*record.Shard, *barrier) {
	url, client := s.ClockURL, sess.client
	if url == "" {
		url = backend.Under(sess.base, "/v1/models")
	} else {
		// Another server: none of the target's headers (credentials) go
		// to it; https is verified as the target's is.
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig, tr.Proxy = sess.tls, nil
		client = &http.Client{Transport: tr, Timeout: 10 * time.Second}
		defer tr.CloseIdleConnections()
	}
	off := clockOffset(ctx, client, url)
	if off.Method == "none" {
		fmt.Fprintf(progress, "%s: no clock offset from %s (%s): this machine's clock is taken as the server's\n", s.label(), backend.Redact(url), off.Error)
	} else {
		fmt.Fprintf(progress, "%s: clock %+.1f ms off the server's (±%.1f ms, from the Date header of %s)\n", s.label(), record.Ms(off.Offset()), float64(off.UncertaintyNs)/1e6, backend.Redact(url))
	}
	off.URL = backend.Redact(off.URL)
	rec := &record.Shard{Index: s.Index, Count: s.Count, RunID: s.RunID, Barrier: s.Barrier, Stages: shares, Clock: off}
	if !s.StartAt.IsZero() {
		rec.StartAt = s.StartAt.UTC().Format(time.RFC3339Nano)
	}
	host, _ := os.Hostname()
	offset := off.Offset()
	return rec, &barrier{shard: s, host: host, now: func() time.Time { return time.Now().Add(offset) }}
}

// gate waits for stage's start with the other shards, then records in the
// result file when it was planned and when this shard began.
func (b *barrier) gate(ctx context.Context, stage int, clock record.Clock, file *sink, w *results.Writer) error {
	planned, err := b.wait(ctx, stage)
	if err != nil {
		return err
	}
	file.keep(w.WriteStage(results.StageStart{Stage: stage, PlannedUnixNs: planned.UnixNano(), AtNs: int64(clock.Now())}))
	return nil
}

// prepared is how many requests to build ahead for n of this shard's:
// a shard's requests are every count-th of the run's, and the workload
// builds a range; beyond 8 shards they are built as they are sent.
func prepared(n, count int) int {
	switch {
	case count <= 1:
		return n
	case count <= 8:
		return n * count
	}
	return 0
}
