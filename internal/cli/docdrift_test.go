package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/stability"
)

// The markers of pasted experiment output, each followed by a text block
// that TestPastedExperimentOutput regenerates from one real run of
// examples/seed-loop.yaml with -update.
const (
	verdictsMarker = "<!-- experiment verdicts: go test ./internal/cli -run TestPastedExperimentOutput -update (a real run of examples/seed-loop.yaml) -->"
	outputMarker2  = "<!-- experiment output: go test ./internal/cli -run TestPastedExperimentOutput -update (a real run of examples/seed-loop.yaml) -->"
)

// fenced is the text block right after marker in text, and where its body
// starts and ends.
func fenced(t *testing.T, text, marker string) (body string, start, end int) {
	t.Helper()
	i := strings.Index(text, marker+"\n```text\n")
	if i < 0 {
		t.Fatalf("no %q followed by a text block", marker)
	}
	start = i + len(marker) + len("\n```text\n")
	n := strings.Index(text[start:], "```")
	if n < 0 {
		t.Fatalf("the block after %q has no closing fence", marker)
	}
	return text[start : start+n], start, start + n
}

// The experiment output pasted in the README (its four verdicts) and in
// docs/experiments.md (all of it) comes from a real run: -update runs
// examples/seed-loop.yaml (two minutes, real time) and pastes it. Without
// -update the pasted text is held to the shape the code prints now: the
// four short verdicts last, each under analyze.ShortMax characters, their
// details above them.
func TestPastedExperimentOutput(t *testing.T) {
	t.Parallel()
	root := filepath.Join(pkgDir, "..", "..")
	readmePath, guidePath := filepath.Join(root, "README.md"), filepath.Join(root, "docs", "experiments.md")
	if *update {
		out := seedLoopOutput(t, root)
		for _, f := range []struct{ path, marker, block string }{
			{readmePath, verdictsMarker, lastLines(out, 5)},
			{guidePath, outputMarker2, out},
		} {
			b, err := os.ReadFile(f.path)
			if err != nil {
				t.Fatal(err)
			}
			_, start, end := fenced(t, string(b), f.marker)
			if err := os.WriteFile(f.path, []byte(string(b)[:start]+f.block+string(b)[end:]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, f := range []struct{ path, marker string }{{readmePath, verdictsMarker}, {guidePath, outputMarker2}} {
		b, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _, _ := fenced(t, string(b), f.marker)
		lines := strings.Split(strings.TrimRight(body, "\n"), "\n")
		if len(lines) < 5 || lines[len(lines)-5] != "== the four verdicts" {
			t.Errorf("%s: the pasted output does not end with the four verdicts:\n%s", f.path, body)
			continue
		}
		for i, q := range []string{"representative", "configurations", "fair", "stable"} {
			l := lines[len(lines)-4+i]
			if !strings.HasPrefix(l, q+": ") || len([]rune(l)) > analyze.ShortMax {
				t.Errorf("%s: verdict line %q: want %q first and at most %d characters (regenerate: go test ./internal/cli -run TestPastedExperimentOutput -update)", f.path, l, q, analyze.ShortMax)
			}
		}
	}
}

// lastLines are the last n lines of s, with its newline.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n") + "\n"
}

// seedLoopOutput runs examples/seed-loop.yaml as the README says, on free
// ports, and returns what it printed, its temporary folder named as a
// user's would be.
func seedLoopOutput(t *testing.T, root string) string {
	bin := buildBinary(t)
	src, err := os.ReadFile(filepath.Join(root, "examples", "seed-loop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := freePort(t), freePort(t)
	yaml := strings.NewReplacer("127.0.0.1:30111", a, "127.0.0.1:30112", b).Replace(string(src))
	dir := t.TempDir()
	file := filepath.Join(dir, "seed-loop.yaml")
	os.WriteFile(file, []byte(yaml), 0o644)
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "experiment", file, "-o", out)
	cmd.Dir = root
	b2, err := cmd.Output()
	if err != nil {
		t.Fatalf("experiment: %v\n%s", err, b2)
	}
	return strings.NewReplacer(out, "tokperf-results/TIMESTAMP-experiment", a, "127.0.0.1:30111", b, "127.0.0.1:30112").Replace(string(b2))
}

// Figures in prose that the code decides are the code's: the stability
// threshold, the saturation threshold, and one accurate range wherever it
// is quoted.
func TestProseFiguresAreTheCodes(t *testing.T) {
	t.Parallel()
	var all []doc
	all = append(all, guides(t)...)
	checks := []struct {
		name string
		re   *regexp.Regexp
		want string
	}{
		{"the stable verdict's threshold", regexp.MustCompile(`(?:stable needs both within|stable[^.\n]{0,40}within) ±(\d+)%`), fmt.Sprint(100 * stability.StableWithin)},
		{"the saturation threshold", regexp.MustCompile(`(?:less than|under|drops under|by) (\d+)% (?:or more )?per doubling`), fmt.Sprint(100 * analyze.Saturation)},
	}
	for _, d := range all {
		for _, c := range checks {
			for _, m := range c.re.FindAllStringSubmatch(d.text, -1) {
				if m[1] != c.want {
					t.Errorf("%s: %s is %s%% in %q, the code's is %s%%", d.name, c.name, m[1], m[0], c.want)
				}
			}
		}
	}
	// One accurate range, wherever it is quoted.
	ranges := map[string]string{}
	re := regexp.MustCompile(`accurate up to ([0-9,]+) streams`)
	for _, d := range all {
		for _, m := range re.FindAllStringSubmatch(d.text, -1) {
			ranges[strings.ReplaceAll(m[1], ",", "")] += d.name + " "
		}
	}
	if len(ranges) > 1 {
		t.Errorf("the accurate range differs between the docs: %v", ranges)
	}
	for n := range ranges {
		if _, err := strconv.Atoi(n); err != nil {
			t.Errorf("accurate range %q is not a number", n)
		}
	}
}

// The worked example's file shown in docs/experiments.md is
// examples/seed-loop.yaml as shipped (its comments aside).
func TestExperimentGuideShowsTheExample(t *testing.T) {
	t.Parallel()
	root := filepath.Join(pkgDir, "..", "..")
	guide, err := os.ReadFile(filepath.Join(root, "docs", "experiments.md"))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := os.ReadFile(filepath.Join(root, "examples", "seed-loop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(string(ex)), "\n") {
		if !strings.HasPrefix(l, "#") {
			want = append(want, l)
		}
	}
	s := string(guide)
	i := strings.Index(s, "## The worked example")
	a := strings.Index(s[i:], "```yaml\n")
	if i < 0 || a < 0 {
		t.Fatal("docs/experiments.md has no worked example with a yaml block")
	}
	body := s[i+a+len("```yaml\n"):]
	body = body[:strings.Index(body, "```")]
	if got := strings.TrimSpace(body); got != strings.TrimSpace(strings.Join(want, "\n")) {
		t.Errorf("docs/experiments.md shows a seed loop other than examples/seed-loop.yaml's:\n%s", got)
	}
}
