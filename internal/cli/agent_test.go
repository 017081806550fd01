package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// An agent sweep's report: the sessions' figures and the capacity
// search's level and answer (on the simulator, in virtual time, one
// session at a time and no sub-agents, so that no two requests run in an
// order the scheduler picks: the figures are the same every run).
func TestAgentGolden(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() + string(filepath.Separator)
	out, errw, code := runVirtual(t, "sweep", "--sim-profile", "tiny", "--endpoint", "chat", "--seed", "7", "--input-tokens", "16", "--output-tokens", "16",
		"--agent", "turns=3,tools=0.5,tool-time=200ms,fork=0,system=64", "--until-slo", "ttft_p99=50ms,tpot_p99=5ms",
		"--requests", "12", "--max-concurrency", "1", "-o", dir+"r.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	out, errw = strings.ReplaceAll(out, dir, ""), strings.ReplaceAll(errw, dir, "")
	if raceEnabled {
		t.Skip("the verdict's prediction is not made in a race build")
	}
	golden(t, "agent-sweep.stdout", out)
	golden(t, "agent-sweep.stderr", errw)
}

// The page of an agent sweep shows what its text does: each stage's
// session figures as a table, and the capacity search's levels and answer.
func TestAgentPage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() + string(filepath.Separator)
	out, errw, code := runVirtual(t, "sweep", "--sim-profile", "tiny", "--endpoint", "chat", "--seed", "7", "--input-tokens", "16", "--output-tokens", "16",
		"--agent", "turns=3,tools=0.5,tool-time=200ms,fork=0,system=64", "--until-slo", "ttft_p99=50ms,tpot_p99=5ms",
		"--requests", "12", "--max-concurrency", "1", "-o", dir+"r.jsonl", "--format", "html")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	for _, want := range []string{"<h3>Capacity under the SLO</h3>", "<th>TTFT p99 ms [95%]</th>", "<p>capacity: ",
		"<th>sessions</th><th>failed</th><th>latency p50/p99 s</th>", "<p>TTFT p50/p99 ms: first turns "} {
		if !strings.Contains(out, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
