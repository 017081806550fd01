package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/report"
)

// FuzzReportPath runs what `tokperf report` and `tokperf compare` do with
// any file: fold it into a run, render it in every format, compare it with
// itself. Nothing may panic; a file that reads gives a model every format
// renders.
func FuzzReportPath(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("..", "results", "testdata", "format.golden"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	for _, n := range []int{1, 50, 300, len(golden) / 2} {
		f.Add(golden[:min(n, len(golden))])
	}
	f.Add([]byte("\x00\x01"))
	f.Add([]byte(`{"type":"header","format":"tokperf-results/1","setup":{}}` + "\n" + `{"type":"request","id":1,"stage":0,"concurrency":1,"rate":2,"status":"ok","output_tokens":3,"chunks":[[5,1],[9,2]],"first_token_ns":5,"last_token_ns":9,"done_ns":9}` + "\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, in []byte) {
		path := filepath.Join(dir, "f.jsonl")
		if err := os.WriteFile(path, in, 0o644); err != nil {
			t.Fatal(err)
		}
		run, err := ReadRun(context.Background(), path, true)
		if err != nil {
			return
		}
		for _, format := range report.Formats() {
			if err := report.Render(&bytes.Buffer{}, format, run); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
		}
		if c, err := analyze.Compare([]*analyze.Run{run, run}, 0, ""); err == nil {
			for _, format := range report.Formats() {
				if err := report.Render(&bytes.Buffer{}, format, c); err != nil {
					t.Fatalf("compare %s: %v", format, err)
				}
			}
		}
	})
}
