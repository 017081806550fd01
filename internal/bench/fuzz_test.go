package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
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

// FuzzMergeShards: whatever the second shard's file of a run holds, the
// merge never panics, and a merged run renders in every format.
func FuzzMergeShards(f *testing.F) {
	dir := f.TempDir()
	first := `{"type":"header","format":"tokperf-results/1","start_unix_ns":1000000000,"setup":{"load":{"concurrency":[2]},"shard":{"index":0,"count":2,"run_id":"r","stages":[{"stage":0,"concurrency":2,"requests":0,"warmup":0,"my_concurrency":1,"my_requests":0,"my_warmup":0}],"clock":{"method":"http-date","offset_ns":0,"uncertainty_ns":1000}}}}
{"type":"stage","stage":0,"planned_unix_ns":1000000000,"at_ns":5}
{"type":"request","id":0,"stage":0,"concurrency":1,"status":"ok","output_tokens":2,"chunks":[[5,1],[9,1]],"sent_ns":1,"first_token_ns":5,"last_token_ns":9,"done_ns":9}
{"type":"end","requests":1}
`
	if err := os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte(first), 0o644); err != nil {
		f.Fatal(err)
	}
	second := strings.NewReplacer(`"index":0`, `"index":1`, `"offset_ns":0`, `"offset_ns":-3000000`, `"id":0`, `"id":1`).Replace(first)
	f.Add([]byte(second))
	f.Add([]byte(first))
	f.Add([]byte(strings.Replace(second, `"count":2`, `"count":9999999999`, 1)))
	f.Add([]byte(strings.Replace(second, `"index":1`, `"index":-1`, 1)))
	f.Fuzz(func(t *testing.T, in []byte) {
		b := filepath.Join(dir, "b.jsonl")
		if err := os.WriteFile(b, in, 0o644); err != nil {
			t.Fatal(err)
		}
		runs, err := ReadRuns(context.Background(), []string{filepath.Join(dir, "a.jsonl"), b}, true)
		if err != nil {
			return
		}
		for _, run := range runs {
			for _, format := range report.Formats() {
				if err := report.Render(&bytes.Buffer{}, format, run); err != nil {
					t.Fatalf("%s: %v", format, err)
				}
			}
		}
	})
}
