package cli

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/tokperf/tokperf/internal/shard"
)

// shardFlags are run's and sweep's flags for one shard of a run split
// across processes or machines.
type shardFlags struct {
	shard, startAt, barrier, runID, clockURL string
	barrierTimeout                           time.Duration
}

func (f *shardFlags) register(fs *flagSet) {
	fs.group("Sharding (one run split across processes or machines)")
	fs.StringVar(&f.shard, "shard", "", "this process is shard I of N (0 <= I < N, as $JOB_COMPLETION_INDEX): it sends its share of each stage, with request ids of its own; report merges the N files")
	fs.StringVar(&f.startAt, "start-at", "", "start the first stage's measured requests at this time (RFC 3339, e.g. 2026-12-01T17:00:00Z), on the server's clock as its Date header tells")
	fs.StringVar(&f.barrier, "barrier", "", "a directory every shard shares (a ReadWriteMany volume): each stage starts once all N shards are there")
	fs.DurationVar(&f.barrierTimeout, "barrier-timeout", shard.DefaultBarrierTimeout, "how long a shard waits for the others at a stage's barrier")
	fs.StringVar(&f.runID, "run-id", "", "the run's name in every shard's header and in the barrier directory (default: from --start-at, or with --barrier a hash of the flags the shards share)")
	fs.StringVar(&f.clockURL, "clock-url", "", "read the clock offset from the HTTP Date header of this URL (a server that stamps each answer: Go, nginx) instead of the target's /v1/models")
}

// config is the shard of the flags, nil when --shard is not given.
func (f *shardFlags) config(fs *flagSet) (*shard.Config, error) {
	if f.shard == "" {
		if f.startAt != "" || f.barrier != "" || f.runID != "" || f.clockURL != "" {
			return nil, usagef("--start-at, --barrier, --run-id and --clock-url are for a shard: give --shard I/N")
		}
		return nil, nil
	}
	i, n, err := parseShard(f.shard)
	if err != nil {
		return nil, err
	}
	s := &shard.Config{Index: i, Count: n, Barrier: f.barrier, BarrierTimeout: f.barrierTimeout, RunID: f.runID, ClockURL: f.clockURL}
	if f.startAt != "" {
		t, err := time.Parse(time.RFC3339Nano, f.startAt)
		if err != nil {
			return nil, usagef("--start-at %q: want an RFC 3339 time, e.g. 2026-12-01T17:00:00Z", f.startAt)
		}
		s.StartAt = t
	}
	if s.RunID == "" {
		s.RunID = shard.DefaultRunID(s.StartAt)
	}
	if s.RunID == "" && s.Barrier != "" {
		s.RunID = flagsID(fs)
	}
	switch {
	case s.RunID == "":
		return nil, usagef("--shard: give --run-id NAME (or --start-at or --barrier, from which one is derived) so the shards of one run agree on it")
	case strings.ContainsAny(s.RunID, `/\`) || s.RunID == "." || s.RunID == "..":
		return nil, usagef("--run-id %q: a name, not a path", s.RunID)
	case f.barrierTimeout <= 0:
		return nil, usagef("--barrier-timeout must be positive")
	case n > 1 && f.barrier == "" && f.startAt == "":
		return nil, usagef("--shard %s: give --start-at TIME or --barrier DIR so the shards start together", f.shard)
	}
	return s, nil
}

// notInRunID are the flags that may differ between the shards of one run.
var notInRunID = map[string]bool{"shard": true, "out": true, "quiet": true, "format": true, "percentiles": true, "debug-addr": true, "live": true, "clock-url": true, "barrier-timeout": true, "force": true}

// flagsID is a run id from the flags the shards of one run share: a hash
// of their values, so shards given the same command line agree.
func flagsID(fs *flagSet) string {
	h := sha256.New()
	fs.VisitAll(func(fl *pflag.Flag) {
		if !notInRunID[fl.Name] {
			fmt.Fprintf(h, "%s=%s\n", fl.Name, fl.Value.String())
		}
	})
	return fmt.Sprintf("flags-%x", h.Sum(nil)[:6])
}

// parseShard reads I/N with 0 <= I < N.
func parseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case !ok || err1 != nil || err2 != nil:
		return 0, 0, usagef("--shard %q: want I/N, e.g. 0/4 (I from 0, as $JOB_COMPLETION_INDEX)", s)
	case n < 1:
		return 0, 0, usagef("--shard %q: N must be 1 or more", s)
	case i < 0 || i >= n:
		return 0, 0, usagef("--shard %q: I must be from 0 to %d (it counts from 0, as $JOB_COMPLETION_INDEX)", s, n-1)
	}
	return i, n, nil
}

// describe is the progress line that names the shard.
func describeShard(s *shard.Config) string {
	how := "at once"
	switch {
	case s.Barrier != "" && !s.StartAt.IsZero():
		how = fmt.Sprintf("at %s, then each stage through the barrier %s", s.StartAt.Format(time.RFC3339), s.Barrier)
	case s.Barrier != "":
		how = "each stage through the barrier " + s.Barrier
	case !s.StartAt.IsZero():
		how = "at " + s.StartAt.Format(time.RFC3339)
	}
	return fmt.Sprintf("shard %d/%d of run %s: its share of each stage, started %s", s.Index, s.Count, s.RunID, how)
}
