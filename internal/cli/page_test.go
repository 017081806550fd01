package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/memnet"
)

// runTTY is runVirtual with stdout and stderr taken for a terminal.
func runTTY(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		var out, errw bytes.Buffer
		e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errw, tty: true, errTTY: true,
			bench: bench.Env{Getenv: func(string) string { return "" }, Listen: func(string) (net.Listener, error) { return n, nil }, Dial: n.Dial}}
		code = run(context.Background(), args, e)
		stdout, stderr = out.String(), errw.String()
	})
	return
}

// A page (--format html or png) never goes to a terminal: next to the
// result file it comes from, said on stderr; where there is no result file
// to sit beside, it is refused with the redirection to use. Off a
// terminal (a pipe, a file) stdout gets the page as before.
//
// Serial: t.Chdir.
func TestPageNeverToTerminal(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	res := filepath.Join(dir, "r.jsonl")
	sweep := []string{"sweep", "--sim-profile", "tiny", "-c", "1,2", "--requests", "4", "--output-tokens", "8", "-o", res}

	out, errw, code := runTTY(t, append(sweep, "--format", "html")...)
	page, err := os.ReadFile(filepath.Join(dir, "r.html"))
	switch {
	case code != 0:
		t.Fatalf("sweep --format html on a terminal: exit %d\n%s", code, errw)
	case strings.Contains(out, "<html") || strings.Contains(out, "<!DOCTYPE"):
		t.Errorf("the page went to the terminal")
	case err != nil || !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")):
		t.Errorf("no page next to the result file: %v", err)
	case !strings.Contains(errw, "report: "+filepath.Join(dir, "r.html")):
		t.Errorf("stderr does not say where the page went:\n%s", errw)
	}

	for _, tc := range []struct {
		name  string
		args  []string
		file  string // the page written beside the input
		magic string
	}{
		{"report png", []string{"report", res, "--format", "png"}, "r.png", "\x89PNG"},
		{"report html", []string{"report", res, "--format", "html"}, "r.html", "<!DOCTYPE html>"},
		{"compare html", []string{"compare", res, res, "--format", "html"}, "r-compare.html", "<!DOCTYPE html>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(filepath.Join(dir, tc.file))
			out, errw, code := runTTY(t, tc.args...)
			b, err := os.ReadFile(filepath.Join(dir, tc.file))
			if code != 0 || err != nil || !bytes.HasPrefix(b, []byte(tc.magic)) || !strings.Contains(errw, tc.file) {
				t.Errorf("exit %d, %s: %v %.20q; stderr:\n%s", code, tc.file, err, b, errw)
			}
			// The terminal gets the text report, not the page.
			if !strings.Contains(out, "| C") || strings.Contains(out, "<html") || strings.Contains(out, "PNG") {
				t.Errorf("stdout is not the text report:\n%.300s", out)
			}
			// A page already there is not replaced without --force.
			_, errw, code = runTTY(t, tc.args...)
			if code != exitUsage || !strings.Contains(errw, "--force replaces it") {
				t.Errorf("again: exit %d, want %d and --force named:\n%s", code, exitUsage, errw)
			}
			if _, errw, code = runTTY(t, append(tc.args, "--force")...); code != 0 {
				t.Errorf("again with --force: exit %d\n%s", code, errw)
			}
		})
	}

	// sweep's text is on the terminal beside the page it wrote.
	if !strings.Contains(out, "|   2 |") {
		t.Errorf("sweep --format html on a terminal printed no table:\n%s", out)
	}

	// Nowhere to sit beside: refused with what to do.
	for _, args := range [][]string{
		{"check", "--format", "html"},
		{"sweep", "--sim-profile", "tiny", "-c", "1", "-o", "-", "--format", "png"},
	} {
		_, errw, code := runTTY(t, args...)
		if code != exitUsage || !strings.Contains(errw, "writes a page, not text for a terminal") || !strings.Contains(errw, "> report.") {
			t.Errorf("%v: exit %d, want %d and the redirection to use:\n%s", args, code, exitUsage, errw)
		}
	}

	// Off a terminal the page is on stdout, as a pipe expects.
	out, errw, code = runCLI(t, "report", res, "--format", "html")
	if code != 0 || !strings.HasPrefix(out, "<!DOCTYPE html>") {
		t.Errorf("report --format html to a pipe: exit %d, stdout %.40q\n%s", code, out, errw)
	}
}

// compare takes -o like report: the whole comparison in the file, nothing
// on stdout.
func TestCompareOut(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	writeRun(t, a, seedSetup(), map[int]float64{16: 1500}) // one level: writeRun numbers no stages
	writeRun(t, b, seedSetup(), map[int]float64{16: 1400})
	want, errw, code := runCLI(t, "compare", a, b, "--format", "markdown")
	if code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errw)
	}
	for _, format := range []string{"markdown", "html"} {
		path := filepath.Join(dir, "ab."+format)
		out, errw, code := runCLI(t, "compare", a, b, "--format", format, "-o", path)
		got, err := os.ReadFile(path)
		if code != 0 || out != "" || err != nil || len(got) == 0 {
			t.Fatalf("%s: exit %d, stdout %q, file %v\n%s", format, code, out, err, errw)
		}
		if format == "markdown" && string(got) != want {
			t.Errorf("compare -o wrote something else than stdout would have:\n%s\n---\n%s", got, want)
		}
	}
}

// experiment --format html on a terminal writes its page into the
// experiment's folder and prints its text there, instead of refusing.
func TestExperimentPageOnTerminal(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	addr := freePort(t)
	file := filepath.Join(dir, "e.yaml")
	os.WriteFile(file, []byte("configs:\n  - name: a\n    command: [\""+bin+"\", \"sim\", \"--profile\", \"tiny\", \"--addr\", \""+addr+"\"]\n    url: http://"+addr+
		"\n    grace_s: 2\nsweep:\n  concurrency: [1, 2]\n  requests: 4\n  output_tokens: 8\ncheck:\n  skip: true\n"), 0o644)
	var out, errw bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errw, tty: true, errTTY: true, bench: bench.Env{Getenv: os.Getenv}}
	code := run(context.Background(), []string{"experiment", file, "-o", filepath.Join(dir, "out"), "--format", "html"}, e)
	page, err := os.ReadFile(filepath.Join(dir, "out", "experiment.html"))
	if code != 0 || err != nil || !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) {
		t.Fatalf("exit %d, page: %v\n%s\n%s", code, err, out.String(), errw.String())
	}
	if !strings.Contains(out.String(), "== the four verdicts") || strings.Contains(out.String(), "<html") {
		t.Errorf("the terminal did not get the text report:\n%s", out.String())
	}
}
