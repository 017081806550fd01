package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// A sliced file cut anywhere (kill -9 mid-write) keeps every slice whose
// line was complete, and reads as truncated, not as an error.
func TestSlicesSurviveTruncation(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "soak.jsonl")
	w, err := Create(path, Header{Tool: "tokperf", Setup: record.Setup{Command: "soak"}})
	if err != nil {
		t.Fatal(err)
	}
	var ends []int // file size after each slice line
	for i := range 5 {
		rec := record.New(i)
		rec.Sent, rec.Done, rec.Status = time.Duration(i)*time.Minute, time.Duration(i)*time.Minute+time.Second, record.StatusOK
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
		sl := record.Slice{Index: i, From: time.Duration(i) * time.Minute, To: time.Duration(i+1) * time.Minute, Requests: 1, OK: 1, AggregateTokS: 10 + float64(i),
			TTFT: record.SliceDist{N: 1, P50: 5, P99: 5}, ResidentBytes: 4e9}
		if err := w.WriteSlice(sl); err != nil {
			t.Fatal(err)
		}
		st, _ := os.Stat(path)
		ends = append(ends, int(st.Size()))
	}
	full, err := os.ReadFile(path) // no end line: the process was killed
	if err != nil {
		t.Fatal(err)
	}
	for cut := ends[0]; cut <= len(full); cut++ {
		r := NewReader(strings.NewReader(string(full[:cut])), "soak.jsonl")
		for r.Next() {
		}
		if r.Err() != nil {
			t.Fatalf("cut at %d: %v", cut, r.Err())
		}
		want := 0
		for _, e := range ends {
			if e-1 <= cut { // its newline aside
				want++
			}
		}
		got := r.Slices()
		if len(got) != want {
			t.Fatalf("cut at %d: %d slices, want %d", cut, len(got), want)
		}
		if want > 0 && (got[want-1].Index != want-1 || got[want-1].AggregateTokS != 10+float64(want-1) || got[want-1].TTFT.P99 != 5 || got[want-1].ResidentBytes != 4e9) {
			t.Fatalf("cut at %d: last slice %+v", cut, got[want-1])
		}
		// A line cut just before its newline is whole.
		torn := cut != len(full) && full[cut-1] != '\n' && full[cut] != '\n'
		if r.Truncated() != torn {
			t.Fatalf("cut at %d: truncated %v, want %v", cut, r.Truncated(), torn)
		}
	}
}

func TestSliceLineErrors(t *testing.T) {
	t.Parallel()
	head := `{"type":"header","format":"tokperf-results/1"}` + "\n"
	for _, tc := range []struct{ line, want string }{
		{`{"type":"slice","slice":-1}`, "f.jsonl line 2: slice: -1 is negative"},
		{`{"type":"slice","from_ns":10,"to_ns":5}`, "to_ns: 5 is before from_ns 10"},
		{`{"type":"slice","requests":1,"ok":2}`, "requests: 1 with 2 ok"},
		{`{"type":"slice","ttft_ms":"x"}`, "line 2: slice: json"},
	} {
		r := NewReader(strings.NewReader(head+tc.line+"\n"), "f.jsonl")
		for r.Next() {
		}
		if r.Err() == nil || !strings.Contains(r.Err().Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.line, r.Err(), tc.want)
		}
	}
}
