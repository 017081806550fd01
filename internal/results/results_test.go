package results

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tokperf/tokperf/internal/record"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func header() Header {
	return Header{
		Tool: "tokperf", Version: "0.1.0", Created: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC), StartUnixNs: 1795000000000000000,
		Setup: record.Setup{
			Command: "sweep", URL: "http://127.0.0.1:30000", Endpoint: "generate", Route: "/generate", Model: "m",
			Server:   record.Server{Engine: "sglang", Version: "0.5.5"},
			Workload: record.Workload{InputTokens: 128, OutputTokens: 1000, IgnoreEOS: true, Seed: 1},
			Load:     record.Load{Concurrency: []int{1, 4}, Warmup: -1, TimeoutS: 600},
		},
		Machine: record.Machine{Hostname: "h", OS: "linux", Arch: "amd64", CPUs: 2, GoVersion: "go1.26.8"},
	}
}

func records() []record.Record {
	ok := record.New(7)
	ok.Stage, ok.Concurrency = 1, 4
	ok.Scheduled, ok.Sent, ok.FirstByte, ok.Done = 1000, 1500, 2_000_000, 30_000_000
	ok.AddChunk(10_000_000, 1)
	ok.FirstContent = 10_000_000
	ok.AddChunk(16_000_000, 3)
	ok.OutputTokens, ok.OutputSource, ok.ChunkSource = 4, record.SourceUsage, record.SourceContinuous
	ok.PromptTokens, ok.PromptSource = 128, record.SourceUsage
	ok.Status, ok.HTTPCode, ok.FinishReason = record.StatusOK, 200, "length"
	// The server's queue and prefill: the record's TTFT split.
	ok.Server = &record.ServerTiming{QueueMs: 2.5, PromptMs: 4.25, E2EMs: 29.9, OutputTokens: 3}
	failed := record.New(8)
	failed.Warmup, failed.Scheduled, failed.Sent, failed.Done = true, 0, 10, 20
	failed.Status, failed.HTTPCode, failed.Error, failed.Retries = record.StatusHTTPError, 503, "HTTP 503: loading", 1
	return []record.Record{ok, failed}
}

func write(t *testing.T, path string, interrupted bool) {
	t.Helper()
	w, err := Create(path, header())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records() {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(interrupted); err != nil {
		t.Fatal(err)
	}
}

func TestFormatGolden(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "r.jsonl")
	write(t, path, false)
	got, _ := os.ReadFile(path)
	if *update {
		os.WriteFile("testdata/format.golden", got, 0o644)
	}
	want, err := os.ReadFile("testdata/format.golden")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("result file format changed (-want +got):\n%s", diff)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "r.jsonl")
	write(t, path, true)
	h, recs, r, err := ReadAll(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(records(), recs); diff != "" {
		t.Errorf("records (-wrote +read):\n%s", diff)
	}
	wrote, _ := records()[0].TTFTSplit()
	if read, ok := recs[0].TTFTSplit(); !ok || read != wrote || !read.QueueKnown || !read.PrefillKnown {
		t.Errorf("TTFT split read back %+v, wrote %+v", read, wrote)
	}
	if h.Setup.Model != "m" || r.End() == nil || !r.End().Interrupted || r.Truncated() {
		t.Errorf("header %+v end %+v truncated %v", h.Setup, r.End(), r.Truncated())
	}
}

func TestCutLastLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "r.jsonl")
	write(t, path, false)
	b, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(b), "\n")
	// A crash mid-write: the header, one record, and half of the next.
	cut := lines[0] + lines[1] + lines[2][:len(lines[2])/2]
	os.WriteFile(path, []byte(cut), 0o644)
	_, recs, r, err := ReadAll(path)
	if err != nil {
		t.Fatalf("a cut last line is not an error: %v", err)
	}
	if len(recs) != 1 || !r.Truncated() || r.End() != nil {
		t.Errorf("%d records, truncated %v, end %v: want 1, true, nil", len(recs), r.Truncated(), r.End())
	}
	// A broken line that is not the last is an error naming file and line.
	os.WriteFile(path, []byte(lines[0]+"{broken\n"+lines[1]), 0o644)
	_, _, _, err = ReadAll(path)
	if err == nil || !strings.Contains(err.Error(), "r.jsonl line 2") {
		t.Errorf("error %v, want one naming r.jsonl line 2", err)
	}
}

// TestBadFiles: a file that is not a whole result file is an error naming
// the file and the line, never a reader with neither error nor header.
func TestBadFiles(t *testing.T) {
	t.Parallel()
	golden, err := os.ReadFile("testdata/format.golden")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(golden), "\n")
	hdr, req := lines[0], lines[1]
	for _, tc := range []struct {
		name, in, want string
	}{
		{"torn header", hdr[:300], "r.jsonl line 1: no header: the file was cut before its first line was complete"},
		{"torn header after a blank line", "\n" + hdr[:10], "r.jsonl line 2: no header: the file was cut"},
		{"garbage", "\x00\x01", "r.jsonl: not a tokperf result file: line 1 is not JSON"},
		{"garbage line", "\x00\x01\n" + hdr, "r.jsonl: not a tokperf result file: line 1 is not JSON"},
		{"JSON, not a header", "[1,2]\n", "r.jsonl: not a tokperf result file: line 1 is not a header"},
		{"end first", `{"type":"end"}` + "\n" + hdr, "r.jsonl line 1: not a tokperf result file: the first line is not a header"},
		{"empty", "", "r.jsonl line 1: no header: the file is empty"},
		{"two headers", hdr + req + hdr, "r.jsonl line 3: a second header (the first is line 1)"},
		{"negative tokens", hdr + strings.Replace(req, `"output_tokens":4`, `"output_tokens":-4`, 1), "r.jsonl line 2: output_tokens: -4 is negative"},
		{"negative offset", hdr + strings.Replace(req, `"sent_ns":1500`, `"sent_ns":-1500`, 1), "r.jsonl line 2: sent_ns: -1500 is negative"},
		{"negative first token", hdr + strings.Replace(req, `"first_token_ns":10000000`, `"first_token_ns":-10000000`, 1), "r.jsonl line 2: first_token_ns: -10000000 is negative"},
		{"negative chunk tokens", hdr + strings.Replace(req, `[16000000,3]`, `[16000000,-3]`, 1), "r.jsonl line 2: chunks[1]: -3 tokens is negative"},
		{"negative chunk offset", hdr + strings.Replace(req, `[10000000,1]`, `[-10000000,1]`, 1), "r.jsonl line 2: chunks[0]: offset -10000000 is negative"},
		{"chunks out of order", hdr + strings.Replace(req, `[16000000,3]`, `[6000000,3]`, 1), "r.jsonl line 2: chunks[1]: offset 6000000 is before the previous chunk's 10000000"},
		{"garbage last line", hdr + req + "\x00\x01", "r.jsonl line 3: invalid character"},
		// Hostile or corrupt lines that gave absurd figures with exit 0.
		{"first token in 146 years", hdr + strings.Replace(req, `"first_token_ns":10000000`, `"first_token_ns":4611686018427387904`, 1), "r.jsonl line 2: first_token_ns: 4611686018427387904 is more than a year into the run"},
		{"sent after its first token", hdr + strings.Replace(req, `"sent_ns":1500`, `"sent_ns":10000001`, 1), "r.jsonl line 2: sent_ns: 10000001 is after first_token_ns 10000000"},
		{"done before its last token", hdr + strings.Replace(req, `"done_ns":30000000`, `"done_ns":15000000`, 1), "r.jsonl line 2: done_ns: 15000000 is before last_token_ns 16000000"},
		{"stage 99,999,999", hdr + strings.Replace(req, `"stage":1`, `"stage":99999999`, 1), "r.jsonl line 2: stage: 99999999 is not a stage index"},
		{"3,000,000 chunks", hdr + strings.Replace(req, `[[10000000,1],[16000000,3]]`, "[[10000000,1]"+strings.Repeat(",[16000000,0]", 3_000_000)+"]", 1), "r.jsonl line 2: chunks: more than the 1049600 one request can have"},
		{"chunk not a number", hdr + strings.Replace(req, `[16000000,3]`, `[16000000,"3"]`, 1), "r.jsonl line 2: chunks: at byte"},
		{"clock offset of 1e15 ns", strings.Replace(hdr, `"setup":{`, `"setup":{"shard":{"index":0,"count":2,"run_id":"r","clock":{"method":"http-date","offset_ns":1000000000000000,"uncertainty_ns":1}},`, 1) + req, "r.jsonl line 1: header: setup.shard.clock.offset_ns 1000000000000000: more than 24h0m0s from the server's clock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(tc.in, "-") && strings.Contains(tc.want, "negative") {
				t.Fatal("the case did not change the line")
			}
			r := NewReader(strings.NewReader(tc.in), "r.jsonl")
			for r.Next() {
			}
			if r.Err() == nil || !strings.Contains(r.Err().Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", r.Err(), tc.want)
			}
		})
	}
}

// A request line repeated is read once and counted (100,000 copies of one
// id gave 91 million tok/s): the first of each id is kept.
func TestDuplicateIDs(t *testing.T) {
	t.Parallel()
	golden, err := os.ReadFile("testdata/format.golden")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(golden), "\n")
	in := lines[0] + strings.Repeat(lines[1], 1000) + strings.Join(lines[2:], "")
	r := NewReader(strings.NewReader(in), "r.jsonl")
	var ids []int
	for r.Next() {
		ids = append(ids, r.Record().ID)
	}
	if r.Err() != nil || !slices.Equal(ids, []int{7, 8}) || r.Duplicates() != 999 {
		t.Fatalf("ids %v, %d duplicates, %v: want [7 8], 999 skipped", ids, r.Duplicates(), r.Err())
	}
}

// The hand decoder of chunks reads what encoding/json reads, and refuses
// what it refuses.
func FuzzChunks(f *testing.F) {
	for _, s := range []string{`[[10000000,1],[16000000,3]]`, `[]`, `null`, ` [ [1 , 2] ]`, `[[1,2],]`, `[[1.5,2]]`, `[[1,2,3]]`, `[[-1,99999999999999999999]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var want [][2]int64
		werr := json.Unmarshal(in, &want)
		var got struct {
			C chunks `json:"c"`
		}
		gerr := json.Unmarshal(append(append([]byte(`{"c":`), in...), '}'), &got)
		if werr == nil && gerr == nil && !slices.Equal(want, [][2]int64(got.C)) {
			t.Fatalf("%q: got %v, encoding/json %v", in, got.C, want)
		}
		if werr != nil && gerr == nil {
			t.Fatalf("%q: accepted what encoding/json refuses (%v): %v", in, werr, got.C)
		}
	})
}

// FuzzReader: whatever the bytes, reading never panics and ends either in
// an error or with a header; records come only after a header and hold no
// negative count or offset.
func FuzzReader(f *testing.F) {
	b, err := os.ReadFile("testdata/format.golden")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	// A real file torn in its first lines (a crash, or head -c).
	// Every 97th byte: enough to cut the header and a request line in a few
	// places, few enough that the seeds take a fraction of a short fuzzing
	// run (each cut byte is found by the mutator anyway).
	for i := 0; i < min(len(b), 1200); i += 97 {
		f.Add(b[:i])
	}
	f.Add([]byte("{\"type\":\"request\"}\n"))
	if sliced, err := os.ReadFile("testdata/sliced.jsonl"); err == nil {
		f.Add(sliced)
	}
	f.Add([]byte("\x00\x01"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewReader(strings.NewReader(string(in)), "fuzz.jsonl")
		n := 0
		for r.Next() {
			n++
			if r.Header() == nil {
				t.Fatal("a record without a header")
			}
			rec := r.Record()
			if rec.OutputTokens < 0 || rec.Sent < 0 || rec.Done < 0 || rec.ChunkTokens() < 0 {
				t.Fatalf("record with negative figures: %+v", rec)
			}
			for i := 1; i < len(rec.Chunks); i++ {
				if rec.Chunks[i].At < rec.Chunks[i-1].At {
					t.Fatalf("chunks out of order: %+v", rec.Chunks)
				}
			}
		}
		for _, s := range r.Slices() {
			if s.Index < 0 || s.From < 0 || s.To < s.From || s.Requests < s.OK+s.Errors || s.OK < 0 || s.Errors < 0 {
				t.Fatalf("slice with impossible figures: %+v", s)
			}
		}
		if r.Err() == nil && r.Header() == nil {
			t.Fatalf("neither an error nor a header (truncated %v)", r.Truncated())
		}
		if r.Err() != nil && !strings.HasPrefix(r.Err().Error(), "fuzz.jsonl") {
			t.Fatalf("error %q does not name the file", r.Err())
		}
	})
}

func BenchmarkWrite(b *testing.B) {
	w, err := Create(filepath.Join(b.TempDir(), "r.jsonl"), header())
	if err != nil {
		b.Fatal(err)
	}
	rec := records()[0]
	for i := range 1000 {
		rec.AddChunk(time.Duration(i)*time.Millisecond, 1)
	}
	b.ReportAllocs()
	for b.Loop() {
		w.Write(rec)
	}
	w.Close(false)
}
