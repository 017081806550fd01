package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestRunConversations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, errw, code := runVirtual(t, "run", "--sim-profile", "tiny", "--turns", "3", "-c", "2", "--requests", "2", "--warmup", "0",
		"--input-tokens", "50", "--output-tokens", "10", "--think-time", "1s", "--own-answers", "-o", filepath.Join(dir, "r.jsonl"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	for _, want := range []string{"by turn of the conversations", "| 3 | 2 |", "as conversations (3 turns, the history growing with the server's own answers)"} {
		if !strings.Contains(out+errw, want) {
			t.Errorf("no %q in\n%s\n%s", want, out, errw)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--multi-turn"}, "give one, or --turns N"},
		{[]string{"--turns", "2", "--rate", "3"}, "drop --rate"},
		{[]string{"--own-answers"}, "go with --turns, --multi-turn or --agent"},
		{[]string{"--agent", "turns=3,tools=2"}, `--agent "turns=3,tools=2": tools: "2": want a share from 0 to 1`},
		{[]string{"--agent", "turns=3,colour=red"}, `colour: unknown key`},
		{[]string{"--agent", "tool-time=fast"}, `tool-time: "fast": want a duration`},
		{[]string{"--agent", "default", "--turns", "3"}, "--agent generates its sessions' turns"},
		{[]string{"--turns", "-1"}, "--turns -1"},
	} {
		_, errw, code := runVirtual(t, append([]string{"run", "--sim-profile", "tiny"}, c.args...)...)
		if code != exitUsage || !strings.Contains(errw, c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, errw)
		}
	}
	// A file that is no agent trace is an error naming it, as --trace's.
	for file, want := range map[string]string{"testdata/nothing.jsonl": "open testdata/nothing.jsonl", "../workload/testdata/trace.jsonl": "trace.jsonl:1: not an agent trace"} {
		_, errw, code := runVirtual(t, "run", "--sim-profile", "tiny", "--agent-trace", file)
		if code == 0 || !strings.Contains(errw, want) {
			t.Errorf("--agent-trace %s: exit %d, %s", file, code, errw)
		}
	}
}
