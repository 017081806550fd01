package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/results"
)

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pkgDir, "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// commands are the command lines of the README's fenced blocks, in order,
// without comments.
func commands(text string) []string {
	var out []string
	for _, block := range regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(text, -1) {
		for _, line := range strings.Split(block[1], "\n") {
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "|") {
				out = append(out, line)
			}
		}
	}
	return out
}

func tokperfArgs(t *testing.T, line string) []string {
	t.Helper()
	const prefix = "go run ./cmd/tokperf "
	if !strings.HasPrefix(line, prefix) {
		t.Fatalf("%q does not start with %q", line, prefix)
	}
	return strings.Fields(strings.TrimPrefix(line, prefix))
}

// The README starts with the two commands a newcomer needs, and they work:
// the first runs (in virtual time here) a full sweep on the embedded
// simulator, the second is the test command this test is part of.
func TestREADMEFirstCommands(t *testing.T) {
	cmds := commands(readme(t))
	if len(cmds) < 2 || cmds[0] != "go run ./cmd/tokperf sweep" || cmds[1] != "go test ./..." {
		t.Fatalf("the README must open with `go run ./cmd/tokperf sweep` and `go test ./...`, has %q", cmds[:min(2, len(cmds))])
	}
	t.Chdir(t.TempDir())
	out, errw, code := runVirtual(t, tokperfArgs(t, cmds[0])...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	for _, c := range []string{"|   1 |", "|   4 |", "|  16 |", "|  32 |", "verdict:"} {
		if !strings.Contains(out, c) {
			t.Errorf("the sweep's output lacks %q:\n%s", c, out)
		}
	}
	if !strings.Contains(errw, "started the embedded simulator") {
		t.Errorf("the sweep does not say it started the simulator:\n%s", errw)
	}
	files, _ := filepath.Glob("tokperf-results/*-sweep.jsonl")
	if len(files) != 1 {
		t.Errorf("result files %v, want one under tokperf-results/", files)
	}
}

// The worked example in the README is the one TestSeedReproduction checks.
func seedExample(t *testing.T) []string {
	for _, c := range commands(readme(t)) {
		if strings.Contains(c, "--sim-profile seed ") || strings.HasSuffix(c, "--sim-profile seed") {
			return tokperfArgs(t, c)
		}
	}
	t.Fatal("the README shows no worked example with --sim-profile seed")
	return nil
}

// buildBinary builds tokperf once for the tests that run it as a process.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "tokperf")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/tokperf")
	cmd.Dir = filepath.Join(pkgDir, "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// The real binary, real sockets, a real signal: SIGINT keeps every finished
// request in the file and prints the summary of what finished.
func TestBinary(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	out, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "tokperf ") {
		t.Errorf("version: %q %v", out, err)
	}

	cmd := exec.Command(bin, "sweep", "--sim-profile", "tiny", "-c", "2", "--output-tokens", "30", "--requests", "1000000", "-o", dir+"/r.jsonl")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(dir + "/r.jsonl")
		if bytes.Count(b, []byte(`"warmup"`)) < bytes.Count(b, []byte(`"type":"request"`))-10 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("no measured request after 30 s:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, stderr.String())
	}
	_, recs, r, err := results.ReadAll(dir + "/r.jsonl")
	if err != nil || r.End() == nil || !r.End().Interrupted {
		t.Fatalf("reading the interrupted file: %v, end %+v", err, r.End())
	}
	ok := 0
	for _, rec := range recs {
		if rec.OK() && !rec.Warmup {
			ok++
		}
	}
	if ok < 10 || !strings.Contains(stdout.String(), "|   2 |") {
		t.Errorf("%d ok requests kept; stdout:\n%s", ok, stdout.String())
	}
	if strings.Contains(stderr.String(), "goroutine ") {
		t.Errorf("a stack trace on stderr:\n%s", stderr.String())
	}
}
