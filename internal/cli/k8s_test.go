package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/k8s"
)

// The manifest and the script, pinned: what a user applies is reviewed
// when it changes (go test ./internal/cli -run TestK8sGolden -update).
func TestK8sGolden(t *testing.T) {
	t.Parallel()
	for name, args := range map[string][]string{
		"k8s-job.yaml": {"k8s", "job", "--shards", "4", "--name", "bench", "--run-id", "bench-1", "--image", "reg.example/tokperf:v1", "--pvc", "bench-results",
			"--node-selector", "pool=load", "--api-key-secret", "openai", "--", "sweep", "--url", "http://vllm.default.svc:8000", "-c", "64,256,1024"},
		"k8s-slurm.sbatch": {"k8s", "slurm", "--shards", "4", "--name", "bench", "--run-id", "bench-1", "--dir", "/shared/bench", "--time", "1:00:00",
			"--", "sweep", "--url", "http://gpu-1:8000", "-c", "256", "--header", "X-Team: it's ours"},
	} {
		t.Run(name, func(t *testing.T) {
			out, errw, code := runCLI(t, args...)
			if code != 0 || errw != "" {
				t.Fatalf("exit %d: %s", code, errw)
			}
			golden(t, name, out)
		})
	}
}

// Each mistake gets one line naming the flag and what to do.
func TestK8sUsageErrors(t *testing.T) {
	t.Parallel()
	job := []string{"k8s", "job", "--shards", "4", "--image", "t", "--pvc", "r"}
	bench := []string{"--", "sweep", "--url", "http://vllm:8000"}
	with := func(extra ...string) []string {
		return append(append(append([]string(nil), job...), extra...), bench...)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"k8s"}, "want tokperf k8s job or tokperf k8s slurm"},
		{[]string{"k8s", "pod", "--", "sweep"}, "want tokperf k8s job or tokperf k8s slurm"},
		{job, "give the benchmark after --"},
		{append(job, "--", "soak", "--url", "http://x"), "want run or sweep"},
		{append(job, "--", "sweep", "-c", "8"), "give --url"},
		{append(job, "--", "sweep", "--url", "http://x", "-o", "r.jsonl"), "--out is the manifest's own"},
		{append(job, "--", "sweep", "--url", "http://x", "--api-key", "sk"), "--api-key-secret"},
		{append(job, "--", "sweep", "--urll", "http://x"), "after -- sweep: unknown flag --urll: did you mean --url?"},
		{with("--shards", "0"), "--shards 0"},
		{[]string{"k8s", "job", "--shards", "4", "--pvc", "r", "--", "sweep", "--url", "http://x"}, "--image: give an image"},
		{[]string{"k8s", "job", "--shards", "4", "--image", "t", "--", "sweep", "--url", "http://x"}, "say where the results go"},
		{with("--logs"), "give --pvc or --logs, not both"},
		{[]string{"k8s", "job", "--shards", "4", "--image", "t", "--logs", "--", "sweep", "--url", "http://x"}, "give --start-in"},
		{[]string{"k8s", "job", "--shards", "4", "--image", "t", "--logs", "--barrier", "--", "sweep", "--url", "http://x"}, "--barrier needs a directory"},
		{[]string{"k8s", "job", "--shards", "4", "--image", "t", "--logs", "--start-in", "3m", "--", "sweep", "--url", "http://x", "-c", "64,256,1024"}, "--logs: the sweep has 3 stages"},
		{[]string{"k8s", "job", "--shards", "4", "--image", "t", "--logs", "--start-in", "3m", "--", "sweep", "--url", "http://x"}, "--logs: the sweep has 4 stages"},
		{[]string{"k8s", "job", "--shards", "4", "--image", "t", "--logs", "--start-in", "3m", "--", "run", "--url", "http://x", "--repeat", "3"}, "--logs: the run has 3 stages"},
		{[]string{"k8s", "slurm", "--shards", "2", "--dir", "/x", "--", "sweep", "--url", "http://x", "--until-saturated"}, "shard 0/2 would refuse its command: --shard does not mix with --until-saturated"},
		{with("--cpu", "2 cores"), `--cpu "2 cores": want a positive quantity`},
		{with("--memory", "4GB"), `--memory "4GB"`},
		{with("--node-selector", "pool"), "want key=value"},
		{with("--node-selector", "a/b/c=x"), "the key's name"},
		{with("--name", "Bench"), `--name "Bench"`},
		{with("--name", strings.Repeat("a", 62)), "too long for 4 shards"},
		{with("--spread", "maybe"), "want required or preferred"},
		{with("--dir", "/x"), "--dir is for tokperf k8s slurm"},
		{with("--run-id", "a b"), `--run-id "a b"`},
		{[]string{"k8s", "slurm", "--shards", "2", "--", "sweep", "--url", "http://x"}, "--dir: give a directory"},
		{[]string{"k8s", "slurm", "--shards", "2", "--dir", "/x", "--image", "t", "--", "sweep", "--url", "http://x"}, "--image is for tokperf k8s job"},
		{[]string{"k8s", "slurm", "--shards", "2", "--dir", "rel", "--", "sweep", "--url", "http://x"}, "want an absolute path"},
	} {
		_, errw, code := runCLI(t, tc.args...)
		first, _, _ := strings.Cut(errw, "\n")
		if code != exitUsage || !strings.Contains(first, tc.want) {
			t.Errorf("%q: exit %d, %q, want %q", tc.args, code, first, tc.want)
		}
	}
}

// A --url of the machine itself is each pod's own: the user is told.
func TestK8sWarnsOfLoopback(t *testing.T) {
	t.Parallel()
	_, errw, code := runCLI(t, "k8s", "job", "--shards", "2", "--image", "t", "--pvc", "r", "--", "run", "--url", "http://127.0.0.1:8000")
	if code != 0 || !strings.Contains(errw, "warning: --url http://127.0.0.1:8000 is each shard's own machine") {
		t.Errorf("exit %d, stderr %q", code, errw)
	}
}

// containerArgs are the manifest's container arguments as the kubelet
// passes them to tokperf in the pod of shard index.
func containerArgs(t *testing.T, manifest, index string) []string {
	t.Helper()
	var job struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args []string `yaml:"args"`
					} `yaml:"containers"`
				} `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	if err := yaml.Unmarshal([]byte(manifest), &job); err != nil || len(job.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("reading the manifest: %v\n%s", err, manifest)
	}
	var args []string
	for _, a := range job.Spec.Template.Spec.Containers[0].Args {
		a = strings.ReplaceAll(a, "$("+k8s.IndexVar+")", index)
		args = append(args, strings.ReplaceAll(a, "$$", "$"))
	}
	return args
}

// What each shard runs parses as the tokperf run or sweep it is, with the
// shard flags (--shard, --run-id, --start-at, --barrier, -o -).
func TestK8sShardArgsParse(t *testing.T) {
	t.Parallel()
	for _, tc := range [][]string{
		{"--pvc", "results", "--", "sweep", "--url", "http://vllm:8000", "-c", "64,256", "--header", "X-A: $(HOME)"},
		{"--logs", "--start-in", "3m", "--", "run", "--url", "http://vllm:8000", "--rate", "40", "--duration", "1m"},
	} {
		out, errw, code := runCLI(t, append([]string{"k8s", "job", "--shards", "4", "--image", "t"}, tc...)...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", tc, code, errw)
		}
		for _, index := range []string{"0", "3"} {
			args := containerArgs(t, out, index)
			if !strings.Contains(strings.Join(args, " "), "--shard "+index+"/4") {
				t.Errorf("shard %s runs %q", index, args)
			}
			if err := parseOnly(t, args); err != "" {
				t.Errorf("shard %s: %q does not parse: %s", index, args, err)
			}
		}
	}
	_, errw, code := runCLI(t, "k8s", "job", "--shards", "2", "--image", "t", "--pvc", "r", "--", "run", "--url", "http://x", "--shard", "0/2")
	if code != exitUsage || !strings.Contains(errw, "--shard is the manifest's own") {
		t.Errorf("a --shard of the user's own: exit %d, %q", code, errw)
	}
	b := k8s.Batch{Shards: 4, Dir: "/shared", RunID: "r", Bench: []string{"sweep", "--url", "http://gpu-1:8000", "-c", "256"}}
	if err := parseOnly(t, b.Args("2")); err != "" {
		t.Errorf("the slurm task runs %q, which does not parse: %s", b.Args("2"), err)
	}
}

// dryRun is what tokperf says of args when it runs everything run and
// sweep check before they connect (env.dryRun), "" when they pass.
func dryRun(t *testing.T, args []string) string {
	t.Helper()
	var out, errw bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errw, bench: bench.Env{Getenv: func(string) string { return "" }}, dryRun: true}
	if code := run(context.Background(), args, e); code != 0 {
		return strings.TrimSpace(errw.String())
	}
	return ""
}

// The dry run refuses what a shard refuses when it starts: this is the
// command the --logs Job of a sweep gave every shard before the Job
// refused it.
func TestDryRunRefusesShard(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"sweep without a barrier", []string{"sweep", "--url", "http://vllm:8000", "-c", "64,256,1024", "--shard", "1/4", "--run-id", "r", "--start-at", "2026-12-01T17:00:00Z", "-o", "-"}, "needs --barrier"},
		{"no start", []string{"run", "--url", "http://vllm:8000", "--shard", "1/4", "--run-id", "r"}, "give --start-at TIME or --barrier DIR"},
		{"bad sizes", []string{"run", "--url", "http://vllm:8000", "--input-tokens", "100", "--shared-prefix", "200"}, "--shared-prefix must be below"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dryRun(t, tc.args); !strings.Contains(got, tc.want) {
				t.Errorf("%q: %q, want %q", tc.args, got, tc.want)
			}
		})
	}
	if got := dryRun(t, []string{"sweep", "--url", "http://vllm:8000", "-c", "64,256", "--shard", "1/4", "--run-id", "r", "--barrier", "/b", "--start-at", "2026-12-01T17:00:00Z", "-o", "-"}); got != "" {
		t.Errorf("a sweep's shard with a barrier and a start: %s", got)
	}
}

// Every pod of every generated Job runs, as the kubelet expands its args,
// a command tokperf accepts in full (the dry run), with its own --shard.
func TestK8sPodArgsDryRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"pvc sweep", []string{"--pvc", "results", "--", "sweep", "--url", "http://vllm:8000", "-c", "64,256", "--header", "X-A: $(HOME) $$"}},
		// --start-in with a claim: the later stages start at the barrier.
		{"pvc sweep at a time", []string{"--pvc", "results", "--start-in", "3m", "--", "sweep", "--url", "http://vllm:8000", "-c", "64,256,1024"}},
		{"logs run", []string{"--logs", "--start-in", "3m", "--", "run", "--url", "http://vllm:8000", "--rate", "40", "--duration", "1m"}},
		{"logs one level", []string{"--logs", "--start-in", "3m", "--", "sweep", "--url", "http://vllm:8000", "-c", "256"}},
		{"pvc rates", []string{"--pvc", "results", "--", "sweep", "--url", "http://vllm:8000", "--rate", "5,10,20", "--duration", "30s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const shards = 3
			out, errw, code := runCLI(t, append([]string{"k8s", "job", "--shards", "3", "--image", "t"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errw)
			}
			for i := range shards {
				index := string(rune('0' + i))
				args := containerArgs(t, out, index)
				if !strings.Contains(strings.Join(args, " "), "--shard "+index+"/3") {
					t.Errorf("shard %s runs %q", index, args)
				}
				if err := dryRun(t, args); err != "" {
					t.Errorf("shard %s: %q is refused: %s", index, args, err)
				}
			}
		})
	}
}

// Every array task of a generated sbatch script, run by bash as Slurm runs
// it (SLURM_ARRAY_TASK_ID set), starts a command tokperf accepts in full.
func TestK8sSlurmTasksDryRun(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "tokperf")
	if err := os.WriteFile(stub, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\000' \"$a\"; done > \"$ARGS_OUT\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"barrier sweep", []string{"--", "sweep", "--url", "http://gpu-1:8000", "-c", "8,16", "--header", "X-Team: it's $ours"}},
		{"at a time", []string{"--start-in", "2m", "--", "sweep", "--url", "http://gpu-1:8000", "-c", "8,16,32"}},
		{"run", []string{"--", "run", "--url", "http://gpu-1:8000", "--rate", "4", "--duration", "20s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const shards = 3
			shared := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			script, errw, code := runCLI(t, append([]string{"k8s", "slurm", "--shards", "3", "--dir", shared, "--command", stub}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errw)
			}
			path := filepath.Join(dir, "job.sbatch")
			os.WriteFile(path, []byte(script), 0o644)
			for i := range shards {
				index := string(rune('0' + i))
				argsOut := filepath.Join(dir, "args")
				cmd := exec.Command(bash, path)
				cmd.Env = append(os.Environ(), "SLURM_ARRAY_TASK_ID="+index, "ARGS_OUT="+argsOut)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("bash job.sbatch: %v\n%s\n%s", err, out, script)
				}
				raw, _ := os.ReadFile(argsOut)
				args := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
				if i := slices.Index(args, "--shard"); i < 0 || args[i+1] != index+"/3" {
					t.Errorf("task %s runs %q", index, args)
				}
				if err := dryRun(t, args); err != "" {
					t.Errorf("task %s: %q is refused: %s", index, args, err)
				}
			}
		})
	}
}

// The tokperf command lines of docs/distributed.md parse, and its tokperf
// k8s commands print manifests whose every shard's command passes the dry
// run: each pod's args as the kubelet expands them, each array task's
// exec line as bash reads it, the index substituted.
func TestGuideCommands(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(pkgDir, "..", "..", "docs", "distributed.md"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, line := range commands(string(b)) {
		rest, ok := strings.CutPrefix(line, "go run ./cmd/tokperf ")
		if !ok {
			continue
		}
		rest, _, _ = strings.Cut(rest, " > ")
		args := shellWords(t, rest)
		if err := parseOnly(t, args); err != "" {
			t.Errorf("%q: %s", line, err)
			continue
		}
		if len(args) < 2 || args[0] != "k8s" {
			continue
		}
		kinds[args[1]]++
		out, errw, code := runCLI(t, args...)
		if code != 0 {
			t.Errorf("%q: exit %d: %s", line, code, errw)
			continue
		}
		shards, _ := strconv.Atoi(args[slices.Index(args, "--shards")+1])
		for i := range shards {
			index := strconv.Itoa(i)
			var shard []string
			if args[1] == "job" {
				shard = containerArgs(t, out, index)
			} else {
				lines := strings.Split(strings.TrimSpace(out), "\n")
				exec, ok := strings.CutPrefix(lines[len(lines)-1], "exec ")
				if !ok {
					t.Fatalf("the script does not end in exec:\n%s", out)
				}
				shard = shellWords(t, strings.ReplaceAll(exec, `"${SLURM_ARRAY_TASK_ID}"`, index))[1:]
			}
			if !slices.Contains(shard, index+"/"+strconv.Itoa(shards)) {
				t.Errorf("%q: shard %d runs %q", line, i, shard)
			}
			if err := dryRun(t, shard); err != "" {
				t.Errorf("%q: shard %d: %q is refused: %s", line, i, shard, err)
			}
		}
	}
	if kinds["job"] < 2 || kinds["slurm"] < 2 {
		t.Errorf("docs/distributed.md shows %d k8s job and %d k8s slurm commands, want a claim's and a --logs Job, and two scripts", kinds["job"], kinds["slurm"])
	}
}
