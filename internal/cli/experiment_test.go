package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// An experiment over simulator configurations, end to end with the real
// binary: a good one, one that exits at start, one that never becomes
// ready, one that dies mid-sweep, one that answers wrongly. Each is
// reported as what it is, the others still run, and no process is left.
func TestExperimentEndToEnd(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	// A stand-in nvidia-smi: the experiment waits for GPU memory to be
	// released after each configuration stops.
	fake := t.TempDir()
	os.WriteFile(filepath.Join(fake, "nvidia-smi"), []byte("#!/bin/sh\necho 500\necho 700\n"), 0o755)
	profile := func(name, extra string) string {
		p := filepath.Join(dir, name+".yaml")
		os.WriteFile(p, []byte("name: "+name+"\nmodel: m\ndecode: {linear: {a_ms: 1, c_ms: 0}}\nprefill: {per_token_us: 1}\n"+extra), 0o644)
		return p
	}
	config := func(name, prof, timeout string) string {
		addr := freePort(t)
		return fmt.Sprintf("  - name: %s\n    command: [\"${TOKPERF}\", \"sim\", \"--profile\", %q, \"--addr\", %q]\n    url: http://%s\n    ready_timeout_s: %s\n    grace_s: 2\n", name, prof, addr, addr, timeout)
	}
	yaml := "configs:\n" +
		config("good", profile("good", ""), "20") +
		config("exits", filepath.Join(dir, "missing.yaml"), "20") +
		config("never-ready", profile("slow", "load_s: 3600\n"), "2") +
		config("dies", profile("dies", "die_after: 25\n"), "20") +
		config("wrong", profile("wrong", "wire: {wrong_answers: true}\n"), "20") +
		"sweep:\n  concurrency: [1, 4]\n  requests: 8\n  output_tokens: 20\ncheck:\n  questions: 8\n"
	file := filepath.Join(dir, "exp.yaml")
	os.WriteFile(file, []byte(yaml), 0o644)
	cmd := exec.Command(bin, "experiment", file, "-o", filepath.Join(dir, "out"))
	cmd.Env = append(os.Environ(), "PATH="+fake+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	// Four of five failed: exit 3, naming them.
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitSomeFailed {
		t.Fatalf("experiment: %v, want exit %d\n%s", err, exitSomeFailed, out)
	}
	text := string(out)
	for _, want := range []string{
		"4 of 5 configurations failed: exits, never-ready, dies, wrong",
		"good: ok; stopped in",
		"GPU memory released after",
		"exits: failed (exited at start: exit status",
		"never-ready: failed (not ready after 2 s)",
		"dies: failed (died mid-sweep",
		"wrong: failed (failed its correctness checks)",
		"| 1 | ",
		"verdict: the best configuration that passed its checks, by level: C=1: good",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
	// No simulator of this experiment is left running.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		if strings.Contains(string(b), dir) && !strings.Contains(string(b), "experiment") {
			t.Errorf("left behind: %s", strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
}

func TestBadExperimentFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.yaml")
	os.WriteFile(path, []byte("configs:\n  - name: a\n    command: [sleep, '1']\n    url: localhost\n"), 0o644)
	_, errw, code := runCLI(t, "experiment", path)
	if code != 1 || !strings.Contains(errw, path+":4: configs[0].url: \"localhost\" is not an http(s) URL") {
		t.Errorf("exit %d: %s", code, errw)
	}
}

// An experiment's -o folder that holds results already is refused
// without --force (issue 37).
func TestExperimentFolderNotReplacedWithoutForce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if got, err := experimentDir(dir, false); err != nil || got != dir {
		t.Errorf("an empty folder: %q, %v", got, err)
	}
	os.WriteFile(filepath.Join(dir, "a-1.jsonl"), []byte("{}\n"), 0o644)
	if _, err := experimentDir(dir, false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("a used folder: %v; want a refusal naming --force", err)
	}
	if _, err := experimentDir(dir, true); err != nil {
		t.Errorf("--force: %v", err)
	}
}
