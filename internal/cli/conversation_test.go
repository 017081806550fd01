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
		{[]string{"--own-answers"}, "go with --turns or --multi-turn"},
		{[]string{"--turns", "-1"}, "--turns -1"},
	} {
		_, errw, code := runVirtual(t, append([]string{"run", "--sim-profile", "tiny"}, c.args...)...)
		if code != exitUsage || !strings.Contains(errw, c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, errw)
		}
	}
}
