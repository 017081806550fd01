package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/sim"
)

// Two shards of one run against one simulator, in virtual time: shard 1
// writes its results to stdout (-o -) and nothing else goes there; its
// stdout captured together with its stderr, as kubectl logs holds them,
// merges with shard 0's file into one run.
func TestShardsThroughStdout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var outs, errs [2]bytes.Buffer
	var errsOf [2]error
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		p, err := sim.LoadProfile("tiny")
		if err != nil {
			t.Fatal(err)
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); sim.New(p, sim.Options{NoTrace: true}).Serve(ctx, n) }()
		var wg sync.WaitGroup
		for i := range 2 {
			out := filepath.Join(dir, "shard-0.jsonl")
			if i == 1 {
				out = "-"
			}
			e := &env{stdin: strings.NewReader(""), stdout: &outs[i], stderr: &errs[i],
				bench: bench.Env{Getenv: func(string) string { return "" }, Dial: n.Dial, Listen: func(string) (net.Listener, error) { return n, nil }}}
			args := []string{"--url", "http://127.0.0.1:8000", "-c", "3,5", "--requests", "30", "--output-tokens", "20", "--quiet",
				"--shard", []string{"0/2", "1/2"}[i], "--barrier", filepath.Join(dir, "barrier"), "--run-id", "job-7", "-o", out}
			// loadCmd, not run: run sets the version, a global, and two
			// processes are two goroutines here.
			wg.Go(func() { errsOf[i] = loadCmd(context.Background(), "sweep", args, e) })
		}
		wg.Wait()
		stop()
		<-done
	})
	for i, err := range errsOf {
		if err != nil {
			t.Fatalf("shard %d: %v\n%s", i, err, errs[i].String())
		}
	}
	for k, line := range strings.Split(strings.TrimSuffix(outs[1].String(), "\n"), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("stdout of -o - line %d is not JSON: %q", k+1, line)
		}
	}
	if !strings.Contains(errs[1].String(), "aggregate") {
		t.Errorf("the report of -o - is not on stderr:\n%s", errs[1].String())
	}
	// kubectl logs: stderr's lines among stdout's.
	var logs strings.Builder
	stderrLines := strings.Split(errs[1].String(), "\n")
	for k, line := range strings.SplitAfter(outs[1].String(), "\n") {
		if k < len(stderrLines) {
			logs.WriteString(stderrLines[k] + "\n")
		}
		logs.WriteString(line)
	}
	logFile := filepath.Join(dir, "shard-1.log")
	if err := os.WriteFile(logFile, []byte(logs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
	if code := run(context.Background(), []string{"report", filepath.Join(dir, "shard-0.jsonl"), logFile, "--format", "json"}, e); code != 0 {
		t.Fatalf("report: exit %d\n%s", code, stderr.String())
	}
	var merged struct {
		Stages []struct {
			Concurrency  int `json:"concurrency"`
			Requests     int `json:"requests"`
			OutputTokens int `json:"output_tokens"`
		} `json:"stages"`
		Sharding struct {
			Count int `json:"count"`
			Rows  []struct {
				Shard    int `json:"shard"`
				Requests int `json:"requests"`
			} `json:"rows"`
		} `json:"sharding"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &merged); err != nil {
		t.Fatal(err)
	}
	if len(merged.Stages) != 2 || merged.Stages[0].Concurrency != 3 || merged.Stages[1].Concurrency != 5 || merged.Stages[1].Requests != 30 || merged.Stages[1].OutputTokens != 600 || merged.Sharding.Count != 2 {
		t.Fatalf("merged %+v", merged)
	}
	// C=5's 30 requests go with the slots: 3 of 5 to shard 0, 2 to shard 1.
	if r := merged.Sharding.Rows; len(r) != 4 || r[2].Requests != 18 || r[3].Requests != 12 {
		t.Errorf("rows %+v, want C=5's 18 and 12", r)
	}
	// The text report names the shards.
	stdout.Reset()
	if code := run(context.Background(), []string{"report", filepath.Join(dir, "shard-0.jsonl"), logFile}, e); code != 0 || !strings.Contains(stdout.String(), "merged from 2 shards of run job-7") {
		t.Errorf("text report (exit %d):\n%s", code, stdout.String())
	}
}

// Bad sharding flags are usage errors that say what is wanted.
func TestShardFlagErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--shard", "4/4", "--run-id", "x", "--start-at", "2026-12-01T17:00:00Z"}, "I must be from 0 to 3"},
		{[]string{"--shard", "1", "--run-id", "x"}, "want I/N"},
		{[]string{"--shard", "0/2", "--start-at", "5pm"}, "want an RFC 3339 time"},
		{[]string{"--shard", "0/2"}, "give --run-id"},
		{[]string{"--shard", "0/2", "--run-id", "x"}, "give --start-at TIME or --barrier DIR"},
		{[]string{"--shard", "0/2", "--run-id", "../x", "--barrier", "/tmp/b"}, "a name, not a path"},
		{[]string{"--barrier", "/tmp/b"}, "give --shard I/N"},
		{[]string{"--shard", "0/2", "--start-at", "2026-12-01T17:00:00Z"}, "--shard needs --url"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			e := &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, bench: bench.Env{Getenv: func(string) string { return "" }}}
			code := run(context.Background(), append([]string{"run", "-o", filepath.Join(t.TempDir(), "r.jsonl")}, tc.args...), e)
			if code == 0 || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want an error containing %q", code, stderr.String(), tc.want)
			}
		})
	}
}

// With --barrier and no --run-id, shards given the same flags (but their
// --shard and -o) agree on a run id; another load is another run.
func TestShardRunIDFromFlags(t *testing.T) {
	t.Parallel()
	id := func(args ...string) string {
		fs := newFlags("sweep")
		var f loadFlags
		f.register(fs, "sweep")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		s, err := f.shard.config(fs)
		if err != nil {
			t.Fatal(err)
		}
		return s.RunID
	}
	a := id("--url", "http://x:8000", "-c", "8,16", "--barrier", "/b", "--shard", "0/2", "-o", "a.jsonl")
	b := id("--shard", "1/2", "--url", "http://x:8000", "-c", "8,16", "--barrier", "/b", "-o", "-", "--quiet")
	c := id("--url", "http://x:8000", "-c", "8,32", "--barrier", "/b", "--shard", "0/2")
	if a != b || a == c || !strings.HasPrefix(a, "flags-") {
		t.Errorf("run ids %q, %q (same load), %q (another): want the first two equal, the third not", a, b, c)
	}
}
