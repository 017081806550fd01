package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const testTrace = `{"timestamp": 0, "input_length": 40, "output_length": 5, "hash_ids": [1, 2, 3]}
{"timestamp": 10, "input_length": 40, "output_length": 5, "hash_ids": [1, 2, 4]}
{"timestamp": 20, "input_length": 40, "output_length": 5, "hash_ids": [1, 5, 6]}
`

func TestTraceStatsCommand(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(file, []byte(testTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errw, code := runVirtual(t, "trace", "stats", file, "--block-size", "16")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	// 9 blocks; 1 twice again, 2 once: 3 seen before, all as a prefix; 16+16+16 of 120 tokens.
	for _, want := range []string{"3 requests over 0.0 s, 100.00 requests/s", "input  tokens: mean 40", "9 blocks, 33.3% seen before, 33.3% as a prefix", "40.0% of input tokens"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if err := os.WriteFile(file, []byte(testTrace+`{"timestamp": 30, "input_length": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errw, code = runVirtual(t, "trace", "stats", file)
	if code != exitCouldNotRun || !strings.Contains(errw, `t.jsonl:4: field "input_length"`) {
		t.Errorf("a bad line: exit %d, %s", code, errw)
	}
	_, errw, code = runVirtual(t, "trace", file)
	if code != exitUsage {
		t.Errorf("no stats: exit %d, %s", code, errw)
	}
}

func TestRunTrace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(file, []byte(testTrace), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errw, code := runVirtual(t, "run", "--sim-profile", "tiny", "--trace", file, "--block-size", "16", "--speedup", "2", "-o", filepath.Join(dir, "r.jsonl"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	for _, want := range []string{"trace (200/s): 1", "3 ok", "trace " + file, "the trace's prompts at its timestamps, output tokens as the trace asks"} {
		if !strings.Contains(errw, want) {
			t.Errorf("no %q in stderr:\n%s", want, errw)
		}
	}
	// The first two requests only.
	_, errw, code = runVirtual(t, "run", "--sim-profile", "tiny", "--trace", file, "--block-size", "16", "--requests", "2", "-o", filepath.Join(dir, "r2.jsonl"))
	if code != 0 || !strings.Contains(errw, "trace (100/s): 0 warm-up, then 2 requests") || !strings.Contains(errw, "2 ok") {
		t.Errorf("--requests 2: exit %d\n%s", code, errw)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", file, "--rate", "5"}, "drop --rate"},
		{[]string{"--speedup", "2"}, "go with --trace"},
		{[]string{"--trace", file, "--speedup", "0"}, "--speedup 0"},
		{[]string{"--trace", file, "--block-size", "64"}, `t.jsonl:1: field "hash_ids": 3 blocks of 64 tokens`},
	} {
		_, errw, code := runVirtual(t, append([]string{"run", "--sim-profile", "tiny"}, c.args...)...)
		if code == 0 || !strings.Contains(errw, c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, errw)
		}
	}
}

// trace stats reads an agent trace by its content: sessions, sub-agents,
// turns, waits, and the prefix cache's ceiling. Session a's second turn
// shares its first's two blocks (32 tokens), b's its first's one (16);
// a WEKA session's hash ids are its own, so a and b share nothing: 48 of
// 144 input tokens.
func TestTraceStatsAgent(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "weka.jsonl")
	trace := `{"id":"a","block_size":16,"requests":[{"t":0,"type":"s","in":32,"out":4,"hash_ids":[1,2]},` +
		`{"t":1,"type":"subagent","requests":[{"t":1,"type":"n","in":16,"out":2,"hash_ids":[7]}]},` +
		`{"t":3,"type":"s","in":48,"out":4,"hash_ids":[1,2,3]}]}
{"id":"b","block_size":16,"requests":[{"t":0,"type":"s","in":16,"out":4,"hash_ids":[1],"stop":"tool_use"},{"t":2,"type":"s","in":32,"out":4,"hash_ids":[1,2],"think_time":0.5}]}
`
	if err := os.WriteFile(file, []byte(trace), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errw, code := runVirtual(t, "trace", "stats", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	for _, want := range []string{"(weka): 2 sessions, 1 sub-agent, 5 turns; waits after turns: 0.5 s in tools, 0.0 s the user's", "blocks of 16 tokens", "33.3% of input tokens"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if err := os.WriteFile(file, []byte(`{"id":"a","block_size":16,"requests":[{"t":0,"type":"s","in":16,"out":4,"hash_ids":[1,2]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, errw, code = runVirtual(t, "trace", "stats", file); code == 0 || !strings.Contains(errw, `session "a" turn 1: 2 hash ids for 16 input tokens`) {
		t.Errorf("hash ids past the prompt: exit %d, %s", code, errw)
	}
}
