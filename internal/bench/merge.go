package bench

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/foreign"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
)

// ReadRuns reads result files into runs, one per run: the files that are
// shards of one run (the same run id in their headers) merged into one,
// in the order their first file was given; any other file is a run of its
// own, as ReadRun reads it.
func ReadRuns(ctx context.Context, paths []string, samples bool) ([]*analyze.Run, error) {
	type group struct {
		id    string
		paths []string
	}
	var groups []*group
	byID := map[string]*group{}
	for _, p := range paths {
		sh, err := shardOf(p)
		if err != nil {
			return nil, err
		}
		if sh == nil {
			groups = append(groups, &group{paths: []string{p}})
			continue
		}
		g := byID[sh.RunID]
		if g == nil {
			g = &group{id: sh.RunID}
			byID[sh.RunID] = g
			groups = append(groups, g)
		}
		g.paths = append(g.paths, p)
	}
	var out []*analyze.Run
	for _, g := range groups {
		var run *analyze.Run
		var err error
		if g.id == "" || len(g.paths) == 1 {
			// One shard's file alone is read on its own: its share only.
			run, err = ReadRun(ctx, g.paths[0], samples)
			if err == nil && run.Setup.Shard != nil && run.Setup.Shard.Count > 1 {
				sh := run.Setup.Shard
				run.Warnings = append(run.Warnings, analyze.Warning{Check: "shard_alone", Text: fmt.Sprintf(
					"%s is shard %d of %d of run %s: its figures are its share of the load only; give all %d files to report them merged", g.paths[0], sh.Index, sh.Count, sh.RunID, sh.Count)})
			}
		} else {
			run, err = MergeShards(ctx, g.paths, samples)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, run)
	}
	return out, nil
}

// shardOf is the shard record of a tokperf result file's header, nil for
// a file of a whole run or another tool's.
func shardOf(path string) (*record.Shard, error) {
	if tool, err := foreign.Sniff(path); err == nil && tool != "" {
		return nil, nil
	}
	r, f, err := results.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r.Next()
	if r.Header() == nil {
		return nil, r.Err()
	}
	return r.Header().Setup.Shard, nil
}

// shardFile is one shard's file and its header.
type shardFile struct {
	path   string
	header *results.Header
}

// MaxShards is the most shards a run may have.
const MaxShards = 100_000

// MergeShards reads the files of one sharded run, every shard once, and
// merges them into one run: every shard's records go through one Fold,
// their times placed on one clock (each file's start plus its clock
// offset: the server's clock as each shard estimated it), so percentiles
// are over all requests and a stage's window is the union of the shards';
// the run's Sharding has each shard's own figures, clock and lateness.
func MergeShards(ctx context.Context, paths []string, samples bool) (*analyze.Run, error) {
	files := make([]*shardFile, len(paths))
	for i, p := range paths {
		h, err := shardHeader(p)
		if err != nil {
			return nil, err
		}
		files[i] = &shardFile{path: p, header: h}
	}
	files, err := orderShards(files)
	if err != nil {
		return nil, err
	}
	// One clock for all: the earliest start, on the server's clock.
	at := func(f *shardFile) time.Time {
		return time.Unix(0, f.header.StartUnixNs).Add(f.header.Setup.Shard.Clock.Offset())
	}
	base := at(files[0])
	for _, f := range files {
		if a := at(f); a.Before(base) {
			base = a
		}
	}
	setup := files[0].header.Setup
	setup.Shard = nil
	for _, f := range files {
		// A send is late past the worst of the shards' timers.
		setup.Load.TimerLateP99Ms = max(setup.Load.TimerLateP99Ms, f.header.Setup.Load.TimerLateP99Ms)
	}
	fold := analyze.NewFold(setup, fmt.Sprintf("%s (%d shards of run %s)", strings.Join(paths, ", "), len(files), files[0].header.Setup.Shard.RunID))
	if samples {
		fold.KeepSamples()
	}
	var facts []analyze.ShardFacts
	var runs []*analyze.Run
	truncated, ended, interrupted := false, true, false
	for i, f := range files {
		sh := f.header.Setup.Shard
		shift := at(f).Sub(base)
		total := map[int]record.ShardStage{}
		for _, st := range sh.Stages {
			total[st.Stage] = st
		}
		r, file, err := results.OpenContext(ctx, f.path)
		if err != nil {
			return nil, err
		}
		own := analyze.NewFold(f.header.Setup, f.path)
		for r.Next() {
			rec := r.Record()
			own.Add(&rec)
			// The merged stage is the whole run's: its concurrency and rate.
			if st, ok := total[rec.Stage]; ok {
				rec.Concurrency, rec.Rate = st.Concurrency, st.Rate
			}
			rec.Shift(shift)
			fold.Add(&rec)
			if rec.ID%4096 == 0 && ctx.Err() != nil {
				file.Close()
				return nil, ctx.Err()
			}
		}
		file.Close()
		if err := r.Err(); err != nil {
			return nil, err
		}
		own.Metrics(r.Metrics())
		own.GPU(r.GPU())
		end := r.End()
		own.Integrity(r.Truncated(), end != nil, end != nil && end.Interrupted)
		own.Duplicates(r.Duplicates())
		fold.Duplicates(r.Duplicates())
		truncated, ended, interrupted = truncated || r.Truncated(), ended && end != nil, interrupted || (end != nil && end.Interrupted)
		if i == 0 {
			// Every shard reads the one server's /metrics and GPUs: shard
			// 0's readings stand for them all.
			fold.Metrics(shiftMetrics(r.Metrics(), shift))
			fold.GPU(shiftGPU(r.GPU(), shift))
		}
		runs = append(runs, own.Run())
		late := map[int]time.Duration{}
		for _, s := range r.StageStarts() {
			began := time.Unix(0, f.header.StartUnixNs).Add(time.Duration(s.AtNs)).Add(sh.Clock.Offset())
			late[s.Stage] = began.Sub(time.Unix(0, s.PlannedUnixNs))
		}
		facts = append(facts, analyze.ShardFacts{File: f.path, Host: f.header.Machine.Hostname, Shard: *sh, Late: late})
	}
	fold.Integrity(truncated, ended, interrupted)
	run := fold.Run()
	run.AddShards(facts, runs)
	return run, nil
}

// shardHeader is a shard file's header.
func shardHeader(path string) (*results.Header, error) {
	r, f, err := results.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r.Next()
	if r.Header() == nil {
		return nil, r.Err()
	}
	if r.Header().Setup.Shard == nil {
		return nil, fmt.Errorf("%s: not a shard's file (its header has no shard)", path)
	}
	return r.Header(), nil
}

// orderShards puts the files of one run in shard order, or says which
// shard is missing or given twice, and which files disagree on the run.
func orderShards(files []*shardFile) ([]*shardFile, error) {
	first := files[0].header.Setup.Shard
	n := first.Count
	if n < 1 || n > MaxShards {
		return nil, fmt.Errorf("%s: shard count %d: want 1 to %d", files[0].path, n, MaxShards)
	}
	byIndex := make([]*shardFile, n)
	for _, f := range files {
		sh := f.header.Setup.Shard
		switch {
		case sh.Count != n:
			return nil, fmt.Errorf("%s is shard %d of %d of run %s, %s one of %d: not one run (give each shard's file of one run)", f.path, sh.Index, sh.Count, sh.RunID, files[0].path, n)
		case sh.Index < 0 || sh.Index >= n:
			return nil, fmt.Errorf("%s: shard %d of %d is out of range", f.path, sh.Index, n)
		case byIndex[sh.Index] != nil:
			return nil, fmt.Errorf("shard %d of run %s is given twice: %s and %s", sh.Index, sh.RunID, byIndex[sh.Index].path, f.path)
		}
		if err := sameRun(files[0], f); err != nil {
			return nil, err
		}
		byIndex[sh.Index] = f
	}
	var missing []int
	for i, f := range byIndex {
		if f == nil {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		more := ""
		if len(missing) > 20 {
			missing, more = missing[:20], " …"
		}
		return nil, fmt.Errorf("run %s has %d shards and shards %s%s are missing: give every shard's file (%d given: %s)", first.RunID, n, ints(missing), more, len(files), strings.Join(paths(files), ", "))
	}
	return byIndex, nil
}

// sameRun says why two shard files are not of one run, nil when they are:
// the target, the model, the workload and the load must agree.
func sameRun(a, b *shardFile) error {
	sa, sb := a.header.Setup, b.header.Setup
	for _, c := range []struct {
		what string
		x, y any
	}{
		{"url", sa.URL, sb.URL}, {"model", sa.Model, sb.Model}, {"endpoint", sa.Endpoint, sb.Endpoint},
		{"load", loadOf(sa), loadOf(sb)}, {"workload", sa.Workload, sb.Workload},
	} {
		if !reflect.DeepEqual(c.x, c.y) {
			return fmt.Errorf("%s and %s are shards of run %s with different %s (%v against %v): not one run", a.path, b.path, sa.Shard.RunID, c.what, c.x, c.y)
		}
	}
	return nil
}

// loadOf is the setup's load without the timer probe each shard made of
// its own machine.
func loadOf(s record.Setup) record.Load {
	l := s.Load
	l.TimerLateP99Ms = 0
	return l
}

func paths(files []*shardFile) []string {
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.path
	}
	return slices.Clip(out)
}

func shiftMetrics(in []record.ServerSample, d time.Duration) []record.ServerSample {
	out := slices.Clone(in)
	for i := range out {
		out[i].At += d
	}
	return out
}

func shiftGPU(in []record.GPUSample, d time.Duration) []record.GPUSample {
	out := slices.Clone(in)
	for i := range out {
		out[i].At += d
	}
	return out
}
