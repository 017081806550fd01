package bench

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
)

// Runs started in the same second get a default name each (the second's
// name, then -2, -3 …): none writes over another's records (issue 37).
func TestDefaultNamesNeverCollide(t *testing.T) {
	t.Parallel()
	base := filepath.Join(t.TempDir(), "20260101-120000-run")
	const runs = 8
	names := make([]string, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			out, w, err := createUnique(base, results.Header{})
			if err != nil {
				t.Error(err)
				return
			}
			w.Write(record.Record{ID: i, Status: record.StatusOK})
			w.Close(false)
			names[i] = out
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	files, _ := filepath.Glob(base + "*.jsonl")
	if len(seen) != runs || len(files) != runs {
		t.Errorf("%d runs got %d names and %d files: %v", runs, len(seen), len(files), names)
	}
}

// -o names a file that is there already: the run refuses to replace it
// unless --force says to, and the file is left as it was.
func TestNamedResultNotReplacedWithoutForce(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "r.jsonl")
	os.WriteFile(out, []byte("earlier records\n"), 0o644)
	_, _, err := create(out, "run", record.Setup{}, record.NewClock(), false)
	if err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("error %v; want a refusal naming --force", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "earlier records\n" {
		t.Errorf("the earlier file changed: %q", b)
	}
	_, w, err := create(out, "run", record.Setup{}, record.NewClock(), true)
	if err != nil {
		t.Fatal(err)
	}
	w.Close(false)
	if b, _ := os.ReadFile(out); strings.Contains(string(b), "earlier") {
		t.Errorf("--force kept the earlier file: %q", b)
	}
	// A device is not a result file: writing to it replaces nothing.
	if _, w, err := create(os.DevNull, "run", record.Setup{}, record.NewClock(), false); err != nil {
		t.Errorf("%s refused: %v", os.DevNull, err)
	} else {
		w.Close(false)
	}
}
