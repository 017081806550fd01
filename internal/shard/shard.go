// Package shard owns one run split across processes (--shard I/N): each
// shard's share of a stage (Config.Split), the barrier that starts every
// stage's measured requests together (Barrier), the clock offset that puts
// each shard's times on the server's clock (ClockOffset), and the merge of
// the shards' result files into one run (Group, Merge). It runs no load
// itself: bench sends each shard's share, gated by its Barrier.
//
//	c := &shard.Config{Index: 1, Count: 4, RunID: "job1", Barrier: "/shared"}
//	plans, shares := c.Plans(load.Plans())                     // this shard's share of each stage
//	b := shard.NewBarrier(c, shard.ClockOffset(ctx, client, url).Offset())
//	at, err := b.Wait(ctx, 0)                                  // stage 0 starts then, on the server's clock
//	…
//	groups, err := shard.Group(ctx, paths)                     // later, the N files
//	run, err := shard.Merge(ctx, groups[0], false)             // one run, with a table of the shards
package shard

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"time"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/schedule"
)

// Config makes a run or a sweep one shard of a run split across processes
// (--shard I/N): it sends its share of each stage, with request ids of its
// own, and starts each stage's measured requests together with the other
// shards, at StartAt and through the barrier directory.
type Config struct {
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

// Seed is a sharded run's seed when none was given: one of the run id's,
// so that the shards agree on it.
func Seed(runID string) int64 {
	h := fnv.New64a()
	h.Write([]byte(runID))
	return int64(h.Sum64()&(1<<53-1) | 1)
}

// Label is how progress lines and errors name the shard: "shard 1/4".
func (c *Config) Label() string { return fmt.Sprintf("shard %d/%d", c.Index, c.Count) }

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

// Split is this shard's share of stage p, and the record of it.
func (c *Config) Split(p runner.Plan) (runner.Plan, record.ShardStage) {
	i, n := c.Index, c.Count
	rec := record.ShardStage{Stage: p.Index, Concurrency: p.Concurrency, Rate: p.Rate, Requests: p.Requests, Warmup: p.Warmup}
	q := p
	q.Warmup = share(p.Warmup, i, n)
	switch {
	case p.At != nil:
		q = splitTrace(q, p, i, n)
	case p.Rate > 0:
		q = splitRate(q, p, i, n)
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

// splitTrace is shard i of n's share q of a trace's stage p: the trace is
// split by request, request k to shard k mod n, and runner gives this
// shard's j-th request the index j*n+i = k.
func splitTrace(q, p runner.Plan, i, n int) runner.Plan {
	q.At = nil
	for k := i; k < len(p.At); k += n {
		q.At = append(q.At, p.At[k])
	}
	if q.At == nil {
		q.At = []time.Duration{}
	}
	q.Requests, q.Rate = len(q.At), p.Rate/float64(n)
	q.Concurrency = capShare(p.Concurrency, i, n)
	return q
}

// splitRate is shard i of n's share q of an open-loop stage p: each shard
// its own stream at rate/n, seeded apart (n Poisson streams of rate/n are
// one of the rate); constant arrivals are phased to fall between the
// other shards'.
func splitRate(q, p runner.Plan, i, n int) runner.Plan {
	q.Rate = p.Rate / float64(n)
	q.Requests = share(p.Requests, i, n)
	q.Seed = p.Seed + int64(i)*1_000_003
	q.Concurrency = capShare(p.Concurrency, i, n)
	if p.Arrival == schedule.Constant {
		q.Phase = time.Duration(float64(i) / p.Rate * float64(time.Second))
	} else if i > 0 {
		q.Phase = time.Duration(rand.New(rand.NewPCG(uint64(q.Seed), 0xa77f)).ExpFloat64() / q.Rate * float64(time.Second))
	}
	return q
}

// capShare is shard i of n's share of an open loop's cap on requests in
// flight: a cap is never none.
func capShare(c, i, n int) int {
	s := share(c, i, n)
	if c > 0 && s == 0 {
		s = 1
	}
	return s
}

// Plans are this shard's share of every stage, and the record of them.
func (c *Config) Plans(all []runner.Plan) ([]runner.Plan, []record.ShardStage) {
	out := make([]runner.Plan, len(all))
	shares := make([]record.ShardStage, len(all))
	for i, p := range all {
		out[i], shares[i] = c.Split(p)
	}
	return out, shares
}
