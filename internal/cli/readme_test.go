package cli

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/results"
)

// root is the repository's top directory.
func root() string { return filepath.Join(pkgDir, "..", "..") }

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// doc is one Markdown file of the README's path: its name and text.
type doc struct{ name, text string }

// guides are the README and every docs/*.md guide there is (a guide
// another change has not written yet is just not there).
func guides(t *testing.T) []doc {
	t.Helper()
	out := []doc{{"README.md", readme(t)}}
	paths, _ := filepath.Glob(filepath.Join(root(), "docs", "*.md"))
	slices.Sort(paths)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, doc{"docs/" + filepath.Base(p), string(b)})
	}
	return out
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

// outputMarker opens the README's pasted output of its first command.
const outputMarker = "<!-- sweep output: go test ./internal/cli -run TestREADMEFirstCommands -update -->"

// The README starts with the two commands a newcomer needs, and they work:
// the first runs (in virtual time here) a full sweep on the embedded
// simulator, the second is the test command this test is part of. The
// output pasted under "The output you will see" is that sweep's, in the
// layout the report prints today: -update pastes this run's output (the
// simulator's figures in virtual time, the file's timestamp left out), and
// without it a table whose header the report no longer prints fails.
//
// Serial: t.Chdir.
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
		t.Fatalf("result files %v, want one under tokperf-results/", files)
	}

	pasted := pastedOutput(out, files[0])
	text := readme(t)
	start := strings.Index(text, outputMarker+"\n```text\n")
	if start < 0 {
		t.Fatalf("the README has no %q followed by a text block", outputMarker)
	}
	body := start + len(outputMarker) + len("\n```text\n")
	end := strings.Index(text[body:], "```")
	if end < 0 {
		t.Fatal("the README's pasted output has no closing fence")
	}
	if *update {
		text = text[:body] + pasted + text[body+end:]
		if err := os.WriteFile(filepath.Join(root(), "README.md"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	header := func(s string) string {
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "| C ") {
				return l
			}
		}
		return ""
	}
	if got, want := header(text[body:body+end]), header(pasted); got != want || want == "" {
		t.Errorf("the README's pasted table is not the one the report prints now (go test ./internal/cli -run TestREADMEFirstCommands -update pastes it):\nREADME: %s\nnow:    %s", got, want)
	}
}

// pastedOutput is the sweep's report as the README pastes it, the result
// file's timestamp left out.
func pastedOutput(out, file string) string {
	stamp := strings.TrimSuffix(filepath.Base(file), "-sweep.jsonl")
	return strings.ReplaceAll(strings.TrimLeft(out, "\n"), stamp, "TIMESTAMP")
}

// The README is a path, not a manual: at most 250 lines, prose lines of at
// most 100 characters, a contents list whose links are its sections, the
// first output within the first screen (the pasted table starts before
// line 60), and links to guides that exist (the two guides other changes
// write may not be there yet).
func TestREADMEShape(t *testing.T) {
	t.Parallel()
	text := readme(t)
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > 250 {
		t.Errorf("the README has %d lines, want at most 250: move the rest into a guide under docs/", len(lines))
	}
	fence, table := false, 0
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "```"):
			fence = !fence
		case fence && strings.HasPrefix(l, "| C ") && table == 0:
			table = i + 1
		case !fence && !strings.HasPrefix(l, "|") && !strings.HasPrefix(l, "<!--") && len([]rune(l)) > 100:
			t.Errorf("README.md:%d: a prose line of %d characters (at most 100): %q", i+1, len([]rune(l)), l)
		}
	}
	if table == 0 || table >= 60 {
		t.Errorf("the README's pasted table starts at line %d, want before line 60 (the first screen)", table)
	}
	headings := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^## (.+)$`).FindAllStringSubmatch(text, -1) {
		headings[anchor(m[1])] = true
	}
	contents := regexp.MustCompile(`(?m)^- \[[^\]]+\]\(#([^)]+)\)$`).FindAllStringSubmatch(text, -1)
	if len(contents) < 5 {
		t.Errorf("the README's contents list has %d entries", len(contents))
	}
	for _, m := range contents {
		if !headings[m[1]] {
			t.Errorf("the contents list links #%s, which is no section", m[1])
		}
	}
	notYet := map[string]bool{"docs/experiments.md": true, "docs/distributed.md": true}
	for _, m := range regexp.MustCompile(`\]\((docs/[^)#]+)`).FindAllStringSubmatch(text, -1) {
		if _, err := os.Stat(filepath.Join(root(), m[1])); err != nil && !notYet[m[1]] {
			t.Errorf("the README links %s, which is not there", m[1])
		}
	}
}

// anchor is GitHub's anchor of a heading.
func anchor(h string) string {
	h = strings.ToLower(h)
	h = regexp.MustCompile(`[^a-z0-9 _-]`).ReplaceAllString(h, "")
	return strings.ReplaceAll(h, " ", "-")
}

// The README's pictures of the html report are what tokperf draws today of
// the committed run: a renderer changed without scripts/readme-image.sh
// --redraw fails here.
func TestREADMEImagesCurrent(t *testing.T) {
	t.Parallel()
	text := readme(t)
	run := filepath.Join(root(), "docs", "images", "example.jsonl")
	for _, chart := range []string{"throughput", "pareto"} {
		name := "docs/images/report-" + chart + ".png"
		if !strings.Contains(text, "]("+name+")") {
			t.Errorf("the README does not show %s", name)
		}
		out, errw, code := runCLI(t, "report", run, "--format", "png", "--chart", chart)
		if code != 0 {
			t.Fatalf("report --chart %s: exit %d: %s", chart, code, errw)
		}
		want, err := os.ReadFile(filepath.Join(root(), name))
		if err != nil {
			t.Fatal(err)
		}
		if d := pngDiffer([]byte(out), want); d != "" {
			t.Errorf("%s is not what tokperf draws of %s now (%s): run scripts/readme-image.sh --redraw", name, filepath.Base(run), d)
		}
	}
}

// pngDiffer says how two PNGs differ beyond a few anti-aliased pixels
// (floating point may fuse differently on another processor), or "".
func pngDiffer(a, b []byte) string {
	ia, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		return "drawn: " + err.Error()
	}
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return "committed: " + err.Error()
	}
	if ia.Bounds() != ib.Bounds() {
		return fmt.Sprintf("size %v, committed %v", ia.Bounds(), ib.Bounds())
	}
	differ, r := 0, ia.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			r1, g1, b1, _ := ia.At(x, y).RGBA()
			r2, g2, b2, _ := ib.At(x, y).RGBA()
			if diff(r1, r2)+diff(g1, g2)+diff(b1, b2) > 3*0x1000 {
				differ++
			}
		}
	}
	if differ > r.Dx()*r.Dy()/1000 {
		return fmt.Sprintf("%d pixels differ", differ)
	}
	return ""
}

func diff(a, b uint32) uint32 {
	if a > b {
		return a - b
	}
	return b - a
}

// referenceDoc is docs/reference.md: every command's help, in the order
// tokperf help lists them, generated from the help itself.
func referenceDoc(t *testing.T) string {
	t.Helper()
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  tokperf ([a-z0-9]+)`).FindAllStringSubmatch(helpText, -1) {
		if !slices.Contains(names, m[1]) && (commandTable[m[1]] != nil || m[1] == "version") {
			names = append(names, m[1])
		}
	}
	for n := range commandTable {
		if !slices.Contains(names, n) {
			t.Errorf("tokperf help does not list %s", n)
		}
	}
	var b strings.Builder
	b.WriteString("# Reference: every command and flag\n\n")
	b.WriteString("Generated from `tokperf help` (refresh: `go test ./internal/cli -run TestReferenceCurrent -update`);\n")
	b.WriteString("the guides in this directory explain when and why to use each.\n\n")
	for _, n := range names {
		fmt.Fprintf(&b, "- [tokperf %s](#tokperf-%s)\n", n, n)
	}
	top, _, _ := runCLI(t, "help")
	b.WriteString("\n## tokperf\n\n```text\n" + top + "```\n")
	for _, n := range names {
		out, errw, code := runCLI(t, "help", n)
		if code != 0 {
			t.Fatalf("help %s: exit %d: %s", n, code, errw)
		}
		fmt.Fprintf(&b, "\n## tokperf %s\n\n```text\n%s```\n", n, out)
	}
	b.WriteString(peerTable())
	return b.String()
}

// peerTable is the reference's map of other tools' flags onto tokperf's.
func peerTable() string {
	var b strings.Builder
	b.WriteString("\n## Other tools' flags\n\n")
	b.WriteString("`run` and `sweep` take vLLM's `bench serve` flags: as tokperf's own where they mean the same\n")
	b.WriteString("(alias), else translated; GuideLLM's and AIPerf's are answered with tokperf's name when typed.\n\n")
	b.WriteString("| tool | flag | tokperf | typed to tokperf | note |\n|---|---|---|---|---|\n")
	for _, p := range peerFlags {
		ours, alias := "—", "answered"
		if p.ours != "" {
			ours = "`--" + p.ours + "`"
		}
		switch {
		case p.alias:
			alias = "alias"
		case p.tool == "vLLM":
			alias = "translated"
		}
		fmt.Fprintf(&b, "| %s | `--%s` | %s | %s | %s |\n", p.tool, p.name, ours, alias, p.note)
	}
	return b.String()
}

// docs/reference.md is the help of every command as tokperf prints it now.
func TestReferenceCurrent(t *testing.T) {
	t.Parallel()
	want := referenceDoc(t)
	path := filepath.Join(root(), "docs", "reference.md")
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/cli -run TestReferenceCurrent -update writes it)", err)
	}
	if string(got) != want {
		t.Errorf("docs/reference.md is not the help tokperf prints now: go test ./internal/cli -run TestReferenceCurrent -update")
	}
}

// The worked example in the README or a guide is the one
// TestSeedReproduction checks.
func seedExample(t *testing.T) []string {
	for _, d := range guides(t) {
		for _, c := range commands(d.text) {
			if strings.Contains(c, "--sim-profile seed ") || strings.HasSuffix(c, "--sim-profile seed") {
				return tokperfArgs(t, c)
			}
		}
	}
	t.Fatal("neither the README nor a guide shows a worked example with --sim-profile seed")
	return nil
}

// buildBinary returns the tokperf binary for the tests that run it as a
// process. It is built once per test binary (a link is seconds on a busy
// machine) into a directory TestMain removes.
func buildBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// binDir holds the binary binary builds; TestMain removes it.
var binDir string

var binary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "tokperf-cli-test")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "tokperf")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/tokperf")
	cmd.Dir = root()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// The real binary, real sockets, a real signal: SIGINT keeps every finished
// request in the file and prints the summary of what finished.
func TestBinary(t *testing.T) {
	t.Parallel()
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
