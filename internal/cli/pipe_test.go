package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `tokperf … 2>&1 | head` with a reader that is gone: the output ends, the
// measurement does not; the run finishes with exit 0 and its result file
// gets every request and its end line.
func TestClosedPipeEndsOutputNotRun(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	file := filepath.Join(t.TempDir(), "r.jsonl")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // head has read its lines and gone
	cmd := exec.Command(bin, "run", "--sim-profile", "tiny", "--requests", "20", "-c", "4", "--output-tokens", "10", "-o", file)
	cmd.Stdout, cmd.Stderr = w, w
	err = cmd.Run()
	w.Close()
	if err != nil {
		t.Fatalf("tokperf run with its output closed: %v", err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `{"type":"end","interrupted":false`) {
		t.Errorf("the result file ends %s, want its end line, not interrupted", last)
	}
}
