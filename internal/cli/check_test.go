package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/sim"
)

// check passes a correct configuration and fails one that answers wrongly.
func TestCheckPassAndFail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, errw, code := runVirtual(t, "check", "--sim-profile", "tiny", "--questions", "20", "-o", dir+"/ok.jsonl")
	if code != 0 || !strings.Contains(out, "accuracy 20 of 20 = 100.0%") || !strings.Contains(out, "verdict: pass") {
		t.Errorf("exit %d\n%s\n%s", code, out, errw)
	}
	broken := filepath.Join(dir, "broken.yaml")
	os.WriteFile(broken, []byte("name: broken\nmodel: broken\ndecode: {linear: {a_ms: 1, c_ms: 0}}\nprefill: {per_token_us: 1}\nwire: {wrong_answers: true}\n"), 0o644)
	out, errw, code = runVirtual(t, "check", "--sim-profile", broken, "--questions", "20", "-o", dir+"/bad.jsonl")
	if code != exitVerdictFail || !strings.Contains(out, "FAIL accuracy 0 of 20") || !strings.Contains(out, "verdict: FAIL") {
		t.Errorf("exit %d\n%s\n%s", code, out, errw)
	}
}

// --against compares greedy outputs with another server's.
func TestCheckAgainst(t *testing.T) {
	t.Parallel()
	p, _ := sim.ParseProfile("broken.yaml", []byte("name: broken\nmodel: tiny\ndecode: {linear: {a_ms: 1, c_ms: 0}}\nprefill: {per_token_us: 1}\nseed: 1\nwire: {wrong_answers: true}\n"))
	_, url, stop, err := sim.Start(t.Context(), p, "127.0.0.1:0", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	out, errw, code := runCLI(t, "check", "--sim-profile", "tiny", "--questions", "8", "--against", url, "-o", t.TempDir()+"/a.jsonl")
	if code != 0 || !strings.Contains(out, "agreement with --against: 6 of 14 greedy outputs identical") || !strings.Contains(out, "the first difference is on \"What is") {
		t.Errorf("exit %d\n%s\n%s", code, out, errw)
	}
}

func TestCheckEvalFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "eval.jsonl")
	os.WriteFile(good, []byte(`{"prompt":"What is 2 + 3? Answer with the number only.","expected":"5"}`+"\n"+`{"prompt":"What is 4 times 4?","regex":"\\b16\\b"}`+"\n"), 0o644)
	out, errw, code := runVirtual(t, "check", "--sim-profile", "tiny", "--questions", "0", "--eval", good, "-o", dir+"/e.jsonl")
	if code != 0 || !strings.Contains(out, "your eval 2/2") {
		t.Errorf("exit %d\n%s\n%s", code, out, errw)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte(`{"prompt":"x","expected":"y"}`+"\n"+`{"prompt":"x"}`+"\n"), 0o644)
	_, errw, code = runCLI(t, "check", "--eval", bad)
	if code != 1 || !strings.Contains(errw, bad+" line 2: give exactly one of expected or regex") {
		t.Errorf("exit %d: %s", code, errw)
	}
}

// --against an earlier check's result file compares with its saved outputs.
func TestCheckAgainstFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, errw, code := runVirtual(t, "check", "--sim-profile", "tiny", "--questions", "4", "-o", dir+"/first.jsonl"); code != 0 {
		t.Fatal(errw)
	}
	out, errw, code := runVirtual(t, "check", "--sim-profile", "tiny", "--questions", "4", "--against", dir+"/first.jsonl", "-o", dir+"/second.jsonl")
	if code != 0 || !strings.Contains(out, "agreement with --against: 10 of 10 greedy outputs identical (100%)") {
		t.Errorf("exit %d\n%s\n%s", code, out, errw)
	}
}

// A bad --against is refused before the check runs: a missing result file
// or a value that is neither a URL nor one (the check ran whole first).
func TestCheckAgainstCheckedFirst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ against, want string }{
		{t.TempDir() + "/missing.jsonl", "--against: "},
		{"server:8000", `--against "server:8000": want another server's http(s) URL`},
	} {
		out, errw, code := runVirtual(t, "check", "--sim-profile", "tiny", "--questions", "4", "--against", tc.against, "-o", t.TempDir()+"/c.jsonl")
		if code == 0 || !strings.Contains(errw, tc.want) || strings.Contains(errw+out, "outputs:") {
			t.Errorf("--against %s: exit %d, stderr %q; want it refused before the check ran", tc.against, code, errw)
		}
	}
}
