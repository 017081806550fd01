package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A dataset run on the simulator with ignore_eos: every output is exactly
// the length the file asks for, so the header says the dataset's lengths
// (not "up to 256") and no warning says the server ignored ignore_eos.
func TestDatasetRunAsksTheFilesLengths(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds.jsonl")
	lines := `{"prompt":"hello there how are you","max_tokens":20}
{"prompt":"tell me a story about a cat","max_tokens":40}
{"prompt":"what is two plus two","max_tokens":8}
`
	if err := os.WriteFile(ds, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errw, code := runVirtual(t, "run", "--sim-profile", "tiny", "-c", "2", "--requests", "12", "--dataset", ds, "--ignore-eos", "-o", filepath.Join(dir, "r.jsonl"))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	if !strings.Contains(out, "workload: the dataset's prompts, output tokens as the dataset asks, ignore_eos") || strings.Contains(out, "up to 256") {
		t.Errorf("header:\n%s", out)
	}
	if strings.Contains(out, "did not honour ignore_eos") || strings.Contains(out, "256 asked") {
		t.Errorf("a false accusation:\n%s", out)
	}
	// The truth: 12 requests over the file's 3 records ask 4 × (20+40+8).
	js, errw, code := runVirtual(t, "report", "--format", "json", filepath.Join(dir, "r.jsonl"))
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errw)
	}
	var run struct {
		Stages []struct {
			OutputTokens int `json:"output_tokens"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(js), &run); err != nil || len(run.Stages) != 1 {
		t.Fatalf("%v: %s", err, js)
	}
	if got := run.Stages[0].OutputTokens; got != 4*(20+40+8) {
		t.Errorf("output tokens %d, want %d: the simulator did not give what the file asked", got, 4*(20+40+8))
	}
}
