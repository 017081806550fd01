package shard

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/foreign"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
)

// Group puts result files in runs: the files that are shards of one run
// (the same run id in their headers) together, in the order their first
// file was given; any other file (a whole run's, another tool's, a named
// pipe, which can be read only once) alone. Reading the headers stops when
// ctx is done.
func Group(ctx context.Context, paths []string) ([][]string, error) {
	var out [][]string
	byID := map[string]int{} // a run id's place in out
	for _, p := range paths {
		sh, err := of(ctx, p)
		if err != nil {
			return nil, err
		}
		if sh == nil {
			out = append(out, []string{p})
			continue
		}
		i, ok := byID[sh.RunID]
		if !ok {
			i = len(out)
			byID[sh.RunID] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], p)
	}
	return out, nil
}

// of is the shard record of a tokperf result file's header, nil for a
// file of a whole run or another tool's, and for a named pipe: its header
// read here would be gone for the run's reader (and the open waited for
// its writer without end, deaf to Ctrl-C).
func of(ctx context.Context, path string) (*record.Shard, error) {
	if st, err := os.Stat(path); err == nil && st.Mode()&fs.ModeNamedPipe != 0 {
		return nil, nil
	}
	if tool, err := foreign.Sniff(path); err == nil && tool != "" {
		return nil, nil
	}
	r, f, err := results.OpenContext(ctx, path)
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

// maxShards is the most shards a run may have.
const maxShards = 100_000

// Merge reads the files of one sharded run, every shard once, and merges
// them into one run: every shard's records go through one Fold, their
// times placed on one clock (each file's start plus its clock offset: the
// server's clock as each shard estimated it), so percentiles are over all
// requests and a stage's window is the union of the shards'; the run's
// Sharding has each shard's own figures, clock and lateness.
func Merge(ctx context.Context, paths []string, samples bool) (*analyze.Run, error) {
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
	m := newMerger(files, paths, samples)
	for i, f := range files {
		if err := m.add(ctx, i, f); err != nil {
			return nil, err
		}
	}
	m.fold.Integrity(m.truncated, m.ended, m.interrupted)
	run := m.fold.Run()
	run.AddShards(m.facts, m.runs)
	return run, nil
}

// merger folds the shards' files of one run, one after another.
type merger struct {
	base  time.Time // the earliest shard's start, on the server's clock
	fold  *analyze.Fold
	facts []analyze.ShardFacts
	runs  []*analyze.Run // each shard's own

	truncated, ended, interrupted bool
}

// startOf is when f's clock started, on the server's clock.
func startOf(f *shardFile) time.Time {
	return time.Unix(0, f.header.StartUnixNs).Add(f.header.Setup.Shard.Clock.Offset())
}

// newMerger starts the merged fold: the first shard's setup, with the
// worst timer of all, on a clock that starts with the earliest shard.
func newMerger(files []*shardFile, paths []string, samples bool) *merger {
	m := &merger{base: startOf(files[0]), ended: true}
	for _, f := range files {
		if a := startOf(f); a.Before(m.base) {
			m.base = a
		}
	}
	setup := files[0].header.Setup
	setup.Shard = nil
	for _, f := range files {
		// A send is late past the worst of the shards' timers.
		setup.Load.TimerLateP99Ms = max(setup.Load.TimerLateP99Ms, f.header.Setup.Load.TimerLateP99Ms)
	}
	m.fold = analyze.NewFold(setup, fmt.Sprintf("%s (%d shards of run %s)", strings.Join(paths, ", "), len(files), files[0].header.Setup.Shard.RunID))
	if samples {
		m.fold.KeepSamples()
	}
	return m
}

// add folds shard i's file f: into its own fold as it was, and into the
// merged one shifted onto the common clock, at the whole run's levels.
func (m *merger) add(ctx context.Context, i int, f *shardFile) error {
	sh := f.header.Setup.Shard
	shift := startOf(f).Sub(m.base)
	total := map[int]record.ShardStage{}
	for _, st := range sh.Stages {
		total[st.Stage] = st
	}
	r, file, err := results.OpenContext(ctx, f.path)
	if err != nil {
		return err
	}
	defer file.Close()
	own := analyze.NewFold(f.header.Setup, f.path)
	for r.Next() {
		rec := r.Record()
		own.Add(&rec)
		// The merged stage is the whole run's: its concurrency and rate.
		if st, ok := total[rec.Stage]; ok {
			rec.Concurrency, rec.Rate = st.Concurrency, st.Rate
		}
		rec.Shift(shift)
		m.fold.Add(&rec)
		if rec.ID%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if err := r.Err(); err != nil {
		return err
	}
	own.Metrics(r.Metrics())
	own.GPU(r.GPU())
	own.Host(r.Hosts()...)
	m.fold.Host(r.Hosts()...)
	end := r.End()
	own.Integrity(r.Truncated(), end != nil, end != nil && end.Interrupted)
	own.Duplicates(r.Duplicates())
	m.fold.Duplicates(r.Duplicates())
	m.truncated, m.ended, m.interrupted = m.truncated || r.Truncated(), m.ended && end != nil, m.interrupted || (end != nil && end.Interrupted)
	if i == 0 {
		// Every shard reads the one server's /metrics and GPUs: shard
		// 0's readings stand for them all.
		m.fold.Metrics(shiftMetrics(r.Metrics(), shift))
		m.fold.GPU(shiftGPU(r.GPU(), shift))
	}
	m.runs = append(m.runs, own.Run())
	late := map[int]time.Duration{}
	for _, s := range r.StageStarts() {
		began := time.Unix(0, f.header.StartUnixNs).Add(time.Duration(s.AtNs)).Add(sh.Clock.Offset())
		late[s.Stage] = began.Sub(time.Unix(0, s.PlannedUnixNs))
	}
	m.facts = append(m.facts, analyze.ShardFacts{File: f.path, Host: f.header.Machine.Hostname, Shard: *sh, Late: late})
	return nil
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
	if n < 1 || n > maxShards {
		return nil, fmt.Errorf("%s: shard count %d: want 1 to %d", files[0].path, n, maxShards)
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
