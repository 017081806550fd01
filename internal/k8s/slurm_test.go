package k8s_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/k8s"
)

// The sbatch script, run by bash as an array task would run it, starts
// tokperf with exactly the benchmark's arguments (quotes, $ and newlines
// kept) and that task's shard flags; its #SBATCH lines ask for one task per
// node, one per shard, and come before the first command, where sbatch
// reads them.
// start is the time the tests build manifests and scripts at.
var start = time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)

func TestSlurmScriptRuns(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "bin")
	os.Mkdir(stub, 0o755)
	if err := os.WriteFile(filepath.Join(stub, "tokperf"), []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\000' \"$a\"; done > \"$ARGS_OUT\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	b := k8s.Batch{Shards: 5, Dir: filepath.Join(dir, "shared"), Partition: "cpu", Time: "1:00:00",
		Bench: []string{"sweep", "--url", "http://gpu-1:8000", "--header", "X-A: it's $HOME `x` \"q\"", "--extra-body", "{\"a\":\"\n\"}", "-c", "64,256"}}
	b.Fill(start)
	var script bytes.Buffer
	if err := b.Write(&script); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "job.sbatch")
	os.WriteFile(path, script.Bytes(), 0o644)
	os.Mkdir(b.Dir, 0o755)
	cmd := exec.Command(bash, path)
	cmd.Env = append(os.Environ(), "PATH="+stub+":"+os.Getenv("PATH"), "SLURM_ARRAY_TASK_ID=3", "ARGS_OUT="+filepath.Join(dir, "args"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bash job.sbatch: %v\n%s\n%s", err, out, script.String())
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "args"))
	got := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	want := append(slices.Clone(b.Bench), "--shard", "3/5", "--run-id", b.RunID, "--barrier", b.Dir+"/"+b.RunID+"/barrier", "-o", b.Dir+"/"+b.RunID+"/shard-3.jsonl")
	if !slices.Equal(got, want) {
		t.Errorf("task 3 runs\n%q\nwant\n%q\n%s", got, want, script.String())
	}
	if _, err := os.Stat(filepath.Join(b.Dir, b.RunID)); err != nil {
		t.Errorf("the run's directory was not made: %v", err)
	}
	directives(t, script.String())
}

func directives(t *testing.T, script string) {
	t.Helper()
	lines := strings.Split(script, "\n")
	first := slices.IndexFunc(lines, func(l string) bool { return l != "" && !strings.HasPrefix(l, "#") })
	var sbatch []string
	for i, l := range lines {
		if d, ok := strings.CutPrefix(l, "#SBATCH "); ok {
			if i > first {
				t.Errorf("sbatch ignores %q after the first command", l)
			}
			sbatch = append(sbatch, d)
		}
	}
	for _, want := range []string{"--array=0-4", "--nodes=1", "--ntasks=1", "--exclusive", "--partition=cpu", "--time=1:00:00"} {
		if !slices.Contains(sbatch, want) {
			t.Errorf("#SBATCH lines %q lack %s", sbatch, want)
		}
	}
}

// Expand reads args as the kubelet does: a defined $(VAR) is its value,
// $$ is $, and anything else stays as written.
func TestExpand(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"I": "3"}
	for _, tc := range []struct{ name, in, want string }{
		{"defined", "shard-$(I).jsonl", "shard-3.jsonl"},
		{"undefined", "$(HOME)/x", "$(HOME)/x"},
		{"escaped", "$$(I) $$HOME", "$(I) $HOME"},
		{"lone", "a$ $b $", "a$ $b $"},
		{"unclosed", "$(I", "$(I"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := k8s.Expand(tc.in, vars); got != tc.want {
				t.Errorf("Expand(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	// What Args escapes, PodArgs gets back, the index substituted.
	j := k8s.Job{Shards: 2, Image: "t", Claim: "c", Bench: []string{"run", "--url", "http://x", "--header", "X: $(I) $$ $"}}
	j.Fill(start)
	got := j.PodArgs(1)
	if got[4] != "X: $(I) $$ $" || !slices.Contains(got, "1/2") || !slices.Contains(got, "/results/"+j.RunID+"/shard-1.jsonl") {
		t.Errorf("PodArgs(1) = %q", got)
	}
}
