package shard

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/report"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/summary"
)

// fakeShard is one shard's file written by hand: its clock started at
// start (local wall clock), offset off from the server's, its stage 0
// begun late after the planned start.
type fakeShard struct {
	start time.Time
	off   time.Duration
	late  time.Duration
	recs  []record.Record
}

// writeShards writes a run of len(shards) shards, C=concurrency in all,
// planned to start at planned (server clock), and returns the paths.
func writeShards(t *testing.T, dir, runID string, planned time.Time, concurrency int, shards []fakeShard) []string {
	t.Helper()
	var paths []string
	for i, f := range shards {
		setup := record.Setup{Command: "run", URL: "http://server:8000", Model: "m", Endpoint: "completions",
			Load: record.Load{Concurrency: []int{concurrency}, Requests: 0, TimeoutS: 60},
			Shard: &record.Shard{Index: i, Count: len(shards), RunID: runID,
				Stages: []record.ShardStage{{Stage: 0, Concurrency: concurrency, MyConcurrency: share(concurrency, i, len(shards))}},
				Clock:  record.ClockOffset{Method: "http-date", OffsetNs: int64(f.off), UncertaintyNs: int64(time.Millisecond)}}}
		path := filepath.Join(dir, fmt.Sprintf("shard-%d.jsonl", i))
		w, err := results.Create(path, results.Header{Tool: "tokperf", StartUnixNs: f.start.UnixNano(), Setup: setup, Machine: record.Machine{Hostname: fmt.Sprintf("node-%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		// The gate opened when the local clock, plus the offset, read the
		// planned start (plus the lateness).
		at := planned.Add(f.late).Add(-f.off).Sub(f.start)
		if err := w.WriteStage(results.StageStart{Stage: 0, PlannedUnixNs: planned.UnixNano(), AtNs: int64(at)}); err != nil {
			t.Fatal(err)
		}
		for _, r := range f.recs {
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(false); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	return paths
}

// fakeRecords are n finished requests of shard i of count, sent from
// begin (on the shard's own clock), with random TTFT and chunk gaps.
func fakeRecords(rng *rand.Rand, i, count, n int, begin time.Duration) []record.Record {
	var out []record.Record
	for k := range n {
		r := record.New(k*count + i)
		r.Concurrency = 2
		r.Sent = begin + time.Duration(rng.IntN(50))*time.Millisecond
		r.Scheduled = r.Sent
		r.FirstByte = r.Sent + time.Duration(5+rng.IntN(80))*time.Millisecond
		r.FirstToken, r.FirstContent = r.FirstByte, r.FirstByte
		at := r.FirstToken
		for range 8 {
			r.Chunks = append(r.Chunks, record.Chunk{At: at, Tokens: 1})
			at += time.Duration(1+rng.IntN(20)) * time.Millisecond
		}
		r.LastToken = r.Chunks[len(r.Chunks)-1].At
		r.Done = r.LastToken + time.Millisecond
		r.OutputTokens, r.OutputSource, r.ChunkSource, r.PromptTokens, r.PromptSource = 8, record.SourceUsage, record.SourceContinuous, 16, record.SourceUsage
		r.Status = record.StatusOK
		out = append(out, r)
	}
	return out
}

// The merged percentiles are those of all the shards' records together,
// exactly, and aggregate throughput is the output tokens over the union
// of the shards' windows once their clocks are placed on the server's.
func TestMergedPercentilesAreTheConcatenatedRecords(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	planned := time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)
	shards := []fakeShard{
		{start: planned.Add(-10 * time.Second), off: 0},
		{start: planned.Add(-7 * time.Second), off: 40 * time.Millisecond},
		{start: planned.Add(-12 * time.Second), off: -25 * time.Millisecond},
	}
	var all []record.Record
	first, last := time.Time{}, time.Time{}
	for i := range shards {
		s := &shards[i]
		begin := planned.Add(-s.off).Sub(s.start) // the planned start on the shard's clock
		s.recs = fakeRecords(rng, i, len(shards), 30+10*i, begin)
		for _, r := range s.recs {
			// On the server's clock: the shard's start, its offset, the time.
			sent, done := s.start.Add(s.off).Add(r.Sent), s.start.Add(s.off).Add(r.Done)
			if first.IsZero() || sent.Before(first) {
				first = sent
			}
			if done.After(last) {
				last = done
			}
			r.Concurrency = 5
			all = append(all, r)
		}
	}
	paths := writeShards(t, t.TempDir(), "r1", planned, 5, shards)
	runs, err := readRuns(context.Background(), paths, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || len(runs[0].Stages) != 1 {
		t.Fatalf("%d runs, want the 3 shards merged into 1", len(runs))
	}
	got := runs[0].Stages[0].Stage
	acc := summary.NewAcc(5, record.SLO{})
	for i := range all {
		acc.Add(&all[i])
	}
	want := acc.Stage()
	if got.Requests != len(all) || got.OutputTokens != 8*len(all) || got.Concurrency != 5 {
		t.Errorf("merged %d requests, %d tokens at C=%d; want %d, %d at C=5", got.Requests, got.OutputTokens, got.Concurrency, len(all), 8*len(all))
	}
	for _, d := range []struct {
		name      string
		got, want any
	}{{"TTFT", got.TTFT, want.TTFT}, {"ITL", got.ITL, want.ITL}, {"TPOT", got.TPOT, want.TPOT}, {"E2E", got.E2E, want.E2E}, {"decode", got.DecodeTokS, want.DecodeTokS}} {
		if diff := cmp.Diff(d.want, d.got, cmpopts.EquateNaNs()); diff != "" {
			t.Errorf("%s: merged differs from the concatenated records (-want +got):\n%s", d.name, diff)
		}
	}
	window := last.Sub(first).Seconds()
	if wantAgg := float64(8*len(all)) / window; abs(got.AggregateTokS-wantAgg) > 1e-9*wantAgg {
		t.Errorf("aggregate %.6f tok/s, want %.6f (tokens over the union window %.3f s)", got.AggregateTokS, wantAgg, window)
	}
	sh := runs[0].Sharding
	if sh == nil || sh.Count != 3 || len(sh.Rows) != 3 || sh.Rows[2].Requests != 50 || sh.Clocks[1].OffsetMs != 40 {
		t.Fatalf("sharding %+v", sh)
	}
	for _, w := range runs[0].Warnings {
		if strings.HasPrefix(w.Check, "shard_") {
			t.Errorf("on time and in sync, yet warned: %s", w)
		}
	}
}

func abs(x float64) float64 { return max(x, -x) }

// A shard that began late, and one whose clock is far off the server's,
// are named in the merged report; shards missing or given twice are
// errors naming them.
func TestMergedReportNamesLateAndSkewedShards(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	planned := time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)
	shards := []fakeShard{
		{start: planned.Add(-5 * time.Second)},
		{start: planned.Add(-5 * time.Second), late: 400 * time.Millisecond},
		{start: planned.Add(-5 * time.Second), off: 2500 * time.Millisecond},
	}
	for i := range shards {
		s := &shards[i]
		s.recs = fakeRecords(rng, i, len(shards), 20, planned.Add(s.late).Add(-s.off).Sub(s.start))
	}
	// Shard 0's client kept its requests waiting 30 ms before each send.
	for k := range shards[0].recs {
		shards[0].recs[k].Scheduled -= 30 * time.Millisecond
	}
	dir := t.TempDir()
	paths := writeShards(t, dir, "r2", planned, 6, shards)
	runs, err := readRuns(context.Background(), paths, false)
	if err != nil {
		t.Fatal(err)
	}
	var late, clock, lag []string
	for _, w := range runs[0].Warnings {
		switch w.Check {
		case "shard_late_start":
			late = append(late, w.Text)
		case "shard_clock":
			clock = append(clock, w.Text)
		case "shard_client_lag":
			lag = append(lag, w.Text)
		}
	}
	if len(lag) != 1 || !strings.HasPrefix(lag[0], "shard 0/3 (node-0) fell behind: the client made requests wait") {
		t.Errorf("client-lag warnings %q, want one naming shard 0/3", lag)
	}
	if r := runs[0].Sharding.Rows; !r[0].ClientLag || r[1].ClientLag || r[0].ClientQueueP99Ms < 30 {
		t.Errorf("rows %+v: want shard 0's client lag, queue p99 ≥ 30 ms", r)
	}
	if len(late) != 1 || !strings.Contains(late[0], "shard 1/3 (node-1)") || !strings.Contains(late[0], "400 ms after") {
		t.Errorf("late-start warnings %q, want one naming shard 1/3 400 ms late", late)
	}
	if len(clock) != 1 || !strings.Contains(clock[0], "shard 2/3 (node-2)") || !strings.Contains(clock[0], "+2500 ms") {
		t.Errorf("clock warnings %q, want one naming shard 2/3 off by +2500 ms", clock)
	}
	if r := runs[0].Sharding.Rows[1]; r.StartLateMs == nil || abs(*r.StartLateMs-400) > 1e-6 {
		t.Errorf("shard 1's start lateness %v, want 400 ms", r.StartLateMs)
	}
	// Every format shows the shards' table: the late shard's row, 400 ms.
	for _, format := range []string{"text", "markdown", "html", "json"} {
		var b bytes.Buffer
		if err := report.Render(&b, format, runs[0]); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		want := []string{"node-1", "400.0", "shard 1/3 (node-1) began"}
		if format == "json" {
			want = []string{`"start_late_ms": 400`, `"host": "node-1"`, `"check": "shard_late_start"`}
		}
		for _, w := range want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s report lacks %q", format, w)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		paths []string
		want  string
	}{
		{"missing", paths[:2], "run r2 has 3 shards and shards 2 are missing"},
		{"twice", []string{paths[0], paths[1], paths[1]}, "shard 1 of run r2 is given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readRuns(context.Background(), tc.paths, false)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// Two sharded runs are two runs (compare's A and B).
	other := writeShards(t, t.TempDir(), "r3", planned, 6, shards)
	two, err := readRuns(context.Background(), []string{paths[0], other[2], paths[2], other[0], paths[1], other[1]}, true)
	if err != nil || len(two) != 2 || two[0].Sharding.RunID != "r2" || two[1].Sharding.RunID != "r3" {
		t.Fatalf("two sharded runs: %v, %d runs", err, len(two))
	}
	if c, err := analyze.Compare(two, 0, ""); err != nil || len(c.Runs) != 2 {
		t.Errorf("compare of two sharded runs: %v", err)
	}
}

// readRuns is what bench.ReadRuns does with the files of sharded runs:
// each group of files of one run merged into one.
func readRuns(ctx context.Context, paths []string, samples bool) ([]*analyze.Run, error) {
	groups, err := Group(ctx, paths)
	if err != nil {
		return nil, err
	}
	var out []*analyze.Run
	for _, g := range groups {
		run, err := Merge(ctx, g, samples)
		if err != nil {
			return nil, err
		}
		out = append(out, run)
	}
	return out, nil
}
