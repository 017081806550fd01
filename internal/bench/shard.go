package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/shard"
)

// CheckShard refuses what cfg's shard cannot do (nil when it has none), as
// Sweep would before it connects: for the commands a manifest generates,
// checked where they are written.
func (cfg *SweepConfig) CheckShard() error {
	s := cfg.Shard
	switch {
	case s == nil:
		return nil
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

// startShard estimates the clock offset against the server (or the
// shard's ClockURL) and returns the header's record of the shard and its
// barrier.
func startShard(ctx context.Context, s *shard.Config, sess *Session, shares []record.ShardStage, progress io.Writer) (*record.Shard, *shard.Barrier) {
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
	off := shard.ClockOffset(ctx, client, url)
	if off.Method == "none" {
		fmt.Fprintf(progress, "%s: no clock offset from %s (%s): this machine's clock is taken as the server's\n", s.Label(), backend.Redact(url), off.Error)
	} else {
		fmt.Fprintf(progress, "%s: clock %+.1f ms off the server's (±%.1f ms, from the Date header of %s)\n", s.Label(), record.Ms(off.Offset()), float64(off.UncertaintyNs)/1e6, backend.Redact(url))
	}
	off.URL = backend.Redact(off.URL)
	rec := &record.Shard{Index: s.Index, Count: s.Count, RunID: s.RunID, Barrier: s.Barrier, Stages: shares, Clock: off}
	if !s.StartAt.IsZero() {
		rec.StartAt = s.StartAt.UTC().Format(time.RFC3339Nano)
	}
	return rec, shard.NewBarrier(s, off.Offset())
}

// gate waits for stage's start with the other shards, then records in the
// result file when it was planned and when this shard began.
func gate(ctx context.Context, b *shard.Barrier, stage int, clock record.Clock, file *sink) error {
	planned, err := b.Wait(ctx, stage)
	if err != nil {
		return err
	}
	file.keep(file.w.WriteStage(results.StageStart{Stage: stage, PlannedUnixNs: planned.UnixNano(), AtNs: int64(clock.Now())}))
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

// ReadRuns reads result files into runs, one per run: the files that are
// shards of one run (the same run id in their headers) merged into one
// (shard.Merge), in the order their first file was given; any other file
// is a run of its own, as ReadRun reads it.
func ReadRuns(ctx context.Context, paths []string, samples bool) ([]*analyze.Run, error) {
	groups, err := shard.Group(ctx, paths)
	if err != nil {
		return nil, err
	}
	var out []*analyze.Run
	for _, g := range groups {
		if len(g) > 1 {
			run, err := shard.Merge(ctx, g, samples)
			if err != nil {
				return nil, err
			}
			out = append(out, run)
			continue
		}
		// One shard's file alone is read on its own: its share only.
		run, err := ReadRun(ctx, g[0], samples)
		if err != nil {
			return nil, err
		}
		if sh := run.Setup.Shard; sh != nil && sh.Count > 1 {
			run.Warnings = append(run.Warnings, analyze.Warning{Check: "shard_alone", Text: fmt.Sprintf(
				"%s is shard %d of %d of run %s: its figures are its share of the load only; give all %d files to report them merged", g[0], sh.Index, sh.Count, sh.RunID, sh.Count)})
		}
		out = append(out, run)
	}
	return out, nil
}
