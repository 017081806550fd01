package k8s_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/cli"
	"github.com/tokperf/tokperf/internal/record"
	resultfile "github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/sim"
)

// The script tokperf k8s slurm writes, submitted to a real Slurm cluster
// (.ci/slurm.sh start: one node, this machine) with sbatch --wait: its two
// array tasks measure the embedded simulator this test serves, meet at the
// barrier in the shared directory, and tokperf report merges their files
// into the figures the same records give read as one file; every shard
// began every stage within the barrier's tolerance of the planned start.
//
// It runs with TOKPERF_SLURM=1 (or TOKPERF_REQUIRE_SLURM=1, which fails
// instead of skipping where sbatch is missing), SLURM_CONF naming the
// cluster; .ci/run does so. Real time: the shards are processes Slurm
// starts.
func TestSlurmCluster(t *testing.T) {
	t.Parallel()
	require := os.Getenv("TOKPERF_REQUIRE_SLURM") == "1"
	if !require && os.Getenv("TOKPERF_SLURM") != "1" {
		t.Skip("a real Slurm cluster: TOKPERF_SLURM=1 with SLURM_CONF set (.ci/slurm.sh start)")
	}
	sbatch, err := exec.LookPath("sbatch")
	if err != nil {
		t.Fatalf("sbatch: %v (.ci/slurm.sh install, then start)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	// Slurm's daemons run the tasks, which read the binary and write the
	// shared directory: it must be theirs to reach.
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "tokperf")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/tokperf")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	// The embedded simulator, served by this test.
	p, err := sim.LoadProfile("tiny")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	simCtx, stopSim := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() { defer close(served); sim.New(p, sim.Options{NoTrace: true}).Serve(simCtx, ln) }()
	defer func() { stopSim(); <-served }()

	shared := filepath.Join(dir, "shared")
	os.Mkdir(shared, 0o755)
	var script, errw bytes.Buffer
	args := []string{"k8s", "slurm", "--shards", "2", "--name", "tokperf-ci", "--run-id", "ci-1", "--dir", shared, "--command", bin, "--time", "5:00",
		"--", "sweep", "--url", "http://" + ln.Addr().String(), "-c", "2,4", "--requests", "40", "--output-tokens", "16", "--quiet"}
	if code := cli.Run(ctx, args, strings.NewReader(""), &script, &errw); code != 0 {
		t.Fatalf("tokperf %s: exit %d\n%s", strings.Join(args, " "), code, errw.String())
	}
	job := filepath.Join(dir, "job.sh")
	if err := os.WriteFile(job, script.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// One node: --oversubscribe lifts the script's --exclusive (one task
	// per node), so both tasks run on it at once, as on two nodes.
	sb := exec.CommandContext(ctx, sbatch, "--wait", "--oversubscribe", job)
	sb.Dir = dir
	out, err := sb.CombinedOutput()
	logs := func() string {
		var b strings.Builder
		for _, i := range []string{"0", "1"} {
			l, _ := os.ReadFile(filepath.Join(shared, "ci-1-"+i+".out"))
			b.WriteString("--- task " + i + "\n" + string(l))
		}
		return b.String()
	}
	if err != nil {
		t.Fatalf("sbatch --wait: %v\n%s\n%s", err, out, logs())
	}
	t.Logf("sbatch: %s", bytes.TrimSpace(out))
	files := []string{filepath.Join(shared, "ci-1", "shard-0.jsonl"), filepath.Join(shared, "ci-1", "shard-1.jsonl")}

	merged := report(t, ctx, files...)
	one := report(t, ctx, oneFile(t, dir, files))
	if merged.Sharding == nil || merged.Sharding.Count != 2 {
		t.Fatalf("tokperf report of the shards merged no 2 shards: %+v\n%s", merged.Sharding, logs())
	}
	if len(merged.Stages) != 2 {
		t.Fatalf("%d stages merged, want C=2 and C=4", len(merged.Stages))
	}
	for i := range merged.Stages {
		m, o := merged.Stages[i], one.Stages[i]
		if d := differ(m, o); d != "" {
			t.Errorf("stage %d merged from the shards differs from the same records as one file: %s", i, d)
		}
	}
	for i, want := range []int{2, 4} {
		var st struct {
			Concurrency int `json:"concurrency"`
			Requests    int `json:"requests"`
			OK          int `json:"ok"`
		}
		json.Unmarshal(merged.Stages[i], &st)
		if st.Concurrency != want || st.Requests != 40 || st.OK != 40 {
			t.Errorf("stage %d: C=%d, %d requests, %d ok; want C=%d, 40 and 40", i, st.Concurrency, st.Requests, st.OK, want)
		}
	}
	// Every shard began every stage within the barrier's tolerance.
	rows := 0
	for _, r := range merged.Sharding.Rows {
		if r.StartLateMs == nil {
			t.Errorf("shard %d, stage %s: no recorded start", r.Shard, r.Stage)
			continue
		}
		rows++
		late := time.Duration(*r.StartLateMs * float64(time.Millisecond))
		t.Logf("shard %d, %s: began %.2f ms after the planned start", r.Shard, r.Stage, *r.StartLateMs)
		if late > analyze.ShardStartMargin || late < -analyze.ShardStartMargin {
			t.Errorf("shard %d, %s: began %v after the planned start, beyond ±%v", r.Shard, r.Stage, late, analyze.ShardStartMargin)
		}
	}
	if rows != 4 {
		t.Errorf("%d shard rows with a start, want 2 shards × 2 stages", rows)
	}
}

// differ names the fields where stages a and b (JSON objects) differ, ""
// when none does.
func differ(a, b json.RawMessage) string {
	var ma, mb map[string]any
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return "not JSON objects"
	}
	// A host reading is each process's own (its CPU wait, its sockets'
	// resends): the one file rebuilt from the records has none to merge.
	delete(ma, "host")
	delete(mb, "host")
	var d []string
	for k, va := range ma {
		if vb, ok := mb[k]; !ok || !reflect.DeepEqual(va, vb) {
			d = append(d, fmt.Sprintf("%s: %v, one file %v", k, va, vb))
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			d = append(d, k+": only in the one file")
		}
	}
	slices.Sort(d)
	return strings.Join(d, "; ")
}

// reported is what the test reads of tokperf report --format json.
type reported struct {
	Stages   []json.RawMessage `json:"stages"`
	Sharding *analyze.Sharding `json:"sharding"`
}

// report is tokperf report FILES --format json.
func report(t *testing.T, ctx context.Context, files ...string) reported {
	t.Helper()
	var out, errw bytes.Buffer
	args := append(append([]string{"report"}, files...), "--format", "json")
	if code := cli.Run(ctx, args, strings.NewReader(""), &out, &errw); code != 0 {
		t.Fatalf("tokperf report: exit %d\n%s", code, errw.String())
	}
	var r reported
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("tokperf report --format json: %v\n%s", err, out.String())
	}
	return r
}

// oneFile writes the shards' records as one result file of the whole run:
// shard 0's header without its shard record, starting at the earliest
// shard's start on the server's clock, every shard's requests with their
// times moved onto that clock and their stage's whole concurrency, and the
// server's metrics as shard 0 scraped them.
func oneFile(t *testing.T, dir string, files []string) string {
	t.Helper()
	type shard struct {
		h       *resultfile.Header
		recs    []record.Record
		metrics []record.ServerSample
	}
	var shards []shard
	var base time.Time
	at := func(h *resultfile.Header) time.Time {
		return time.Unix(0, h.StartUnixNs).Add(h.Setup.Shard.Clock.Offset())
	}
	for _, f := range files {
		h, recs, r, err := resultfile.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		if h.Setup.Shard == nil {
			t.Fatalf("%s: no shard in its header", f)
		}
		shards = append(shards, shard{h, recs, r.Metrics()})
		if a := at(h); base.IsZero() || a.Before(base) {
			base = a
		}
	}
	h := *shards[0].h
	h.Setup.Shard = nil
	h.StartUnixNs = base.UnixNano()
	for _, s := range shards {
		h.Setup.Load.TimerLateP99Ms = max(h.Setup.Load.TimerLateP99Ms, s.h.Setup.Load.TimerLateP99Ms)
	}
	path := filepath.Join(dir, "one.jsonl")
	w, err := resultfile.Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range shards {
		whole := map[int]record.ShardStage{}
		for _, st := range s.h.Setup.Shard.Stages {
			whole[st.Stage] = st
		}
		shift := at(s.h).Sub(base)
		for _, r := range s.recs {
			if st, ok := whole[r.Stage]; ok {
				r.Concurrency, r.Rate = st.Concurrency, st.Rate
			}
			r.Shift(shift)
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
		if i == 0 {
			// The one server's /metrics, as shard 0 read it.
			for _, m := range s.metrics {
				m.At += shift
				if err := w.WriteMetrics([]record.ServerSample{m}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := w.Close(false); err != nil {
		t.Fatal(err)
	}
	return path
}
