package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// measuredCause is how a withheld verdict names what was measured: the
// simulator's lost pace or late steps, the client's wait or its own
// connections' resends, a step above linear, too few or failed requests.
var measuredCause = regexp.MustCompile(`C=\d+'s simulator ran [\d.]+% (behind its pace|of its steps late)|the client made C=\d+'s requests wait [\d.]+%|the client read \d+% of C=\d+'s chunks late|the client's connections resent \d+ TCP segments at C=\d+|C=\d+ was held back: |C=\d+ finished \d+ requests for \d+ slots|every request at C=\d+ failed`)

// With three busy loops beside it (child processes spinning on this
// 2-core machine), the README's first sweep, shortened, states its
// verdict with its bound or withholds it in one line naming the measured
// cause; each stage's host line says how long tokperf waited for a CPU;
// no verdict or step cites the machine's TCP resends (other processes').
//
// Serial: real time with CPU hogs the test starts itself, which would slow
// every parallel test (and be slowed by them).
func TestBusyMachineVerdictBoundedOrOneLine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the host readings are Linux's")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh for the busy loops")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var hogs []*exec.Cmd
	defer func() {
		cancel() // kills each loop by its own process
		for _, h := range hogs {
			h.Wait()
		}
	}()
	for range 3 {
		h := exec.CommandContext(ctx, sh, "-c", "while :; do :; done")
		if err := h.Start(); err != nil {
			t.Fatal(err)
		}
		hogs = append(hogs, h)
	}
	start := time.Now()
	out, errw, code := runCLI(t, "sweep", "-c", "1,4,16", "--requests", "8,8,32", "--output-tokens", "32", "-o", filepath.Join(t.TempDir(), "busy.jsonl"))
	t.Logf("%.1f s beside three busy loops", time.Since(start).Seconds())
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	var verdict string
	for line := range strings.Lines(out) {
		line = strings.TrimSuffix(line, "\n")
		judged, ok := strings.CutPrefix(line, "verdict: ")
		if !ok {
			judged, ok = strings.CutPrefix(line, "scaling: ")
		}
		if !ok {
			continue
		}
		if strings.HasPrefix(line, "verdict: ") {
			verdict = line
		}
		if strings.Contains(judged, "kernel") || strings.Contains(judged, "TCP segments") && !strings.Contains(judged, "the client's connections resent") {
			t.Errorf("a verdict cites the machine's resends: %s", line)
		}
		if i := strings.Index(judged, "not judged: "); i >= 0 && i <= len("C=16→32: ") {
			if len(line) > 160 || !measuredCause.MatchString(judged[i:]) {
				t.Errorf("withheld in %d characters, not one short line naming a measured cause: %s", len(line), line)
			}
			continue
		}
		// A verdict that stands beside a starved simulator (its flaw's
		// thresholds are the warning's) says its bound.
		if strings.HasPrefix(line, "verdict: ") && strings.Contains(out, "fell behind real time") && !regexp.MustCompile(`\(a bound of [\d.]+% from the host: `).MatchString(judged) {
			t.Errorf("a finding beside a starved simulator states no bound: %s", line)
		}
	}
	if verdict == "" {
		t.Fatalf("no verdict:\n%s", out)
	}
	t.Log(verdict)
	for _, c := range []string{"C=1", "C=4", "C=16"} {
		if !strings.Contains(out, c+": host: tokperf waited ") {
			t.Errorf("%s: no host line with tokperf's CPU wait:\n%s", c, out)
		}
	}
}
