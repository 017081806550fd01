package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// tokperf explain prints a table per figure, the workloads, the causes and
// its reading, in text and Markdown (goldens), and JSON with a null for a
// statistic a side lacks. The vLLM file is of another server than the
// virtual run's, so most of each difference stays unexplained, and says so.
func TestExplainGolden(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine.jsonl")
	if out, errw, code := runVirtual(t, "run", "--sim-profile", "tiny", "-c", "4", "--requests", "12", "--output-tokens", "20", "-o", mine); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	peer := filepath.Join("..", "foreign", "testdata", "vllm-detailed.json")
	for _, format := range []string{"text", "markdown"} {
		out, errw, code := runCLI(t, "explain", peer, mine, "--format", format)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", format, code, errw)
		}
		golden(t, "explain-vllm."+format, strings.ReplaceAll(out, mine, "mine.jsonl"))
	}
	out, errw, code := runCLI(t, "explain", peer, mine, "--format", "json")
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, errw)
	}
	var got struct {
		Peer    string
		Figures []struct {
			Figure string
			Named  []*float64 `json:"named_share"`
		}
		Reading string
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got.Peer != "vllm" || len(got.Figures) != 5 || !strings.Contains(got.Reading, "unexplained at most") {
		t.Errorf("peer %q, %d figures, reading %q", got.Peer, len(got.Figures), got.Reading)
	}
}

// Bad input is refused with what and where: the files in the wrong order,
// an AIPerf per-request file, a level tokperf did not run, a stage the
// other file lacks.
func TestExplainRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mine := filepath.Join(dir, "mine.jsonl")
	if out, errw, code := runVirtual(t, "run", "--sim-profile", "tiny", "-c", "2", "--requests", "4", "--output-tokens", "8", "-o", mine); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	td := filepath.Join("..", "foreign", "testdata")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"order", []string{mine, filepath.Join(td, "vllm-detailed.json")}, "give the other tool's file first"},
		{"aiperf records", []string{filepath.Join(td, "aiperf-profile_export.jsonl"), mine}, "give its profile_export_aiperf.json"},
		{"level", []string{filepath.Join(td, "vllm-detailed.json"), mine}, "no stage at the other tool's level (C=4 rate=0); it has C=2 rate=0"},
		{"stage", []string{filepath.Join(td, "vllm-detailed.json"), mine, "--stage", "3"}, "has 1 stage(s): no stage 3"},
		{"one file", []string{mine}, "give the other tool's result file, then tokperf's"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errw, code := runCLI(t, append([]string{"explain"}, tc.args...)...)
			if code == 0 || !strings.Contains(errw, tc.want) {
				t.Errorf("exit %d, stderr %q, want it to say %q", code, errw, tc.want)
			}
		})
	}
}
