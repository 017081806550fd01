package results

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
)

// A record the reader would refuse (a chunk of more tokens than any holds,
// as a server's absurd cumulative count made one) is written as a failed
// request, so the file stays readable: a run never writes what its own
// reader refuses (issue 37).
func TestWriterNeverWritesWhatReaderRefuses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "r.jsonl")
	w, err := Create(path, Header{})
	if err != nil {
		t.Fatal(err)
	}
	good := record.New(0)
	good.Status, good.Sent, good.Done = record.StatusOK, 1, 3
	good.AddChunk(2, 1)
	bad := good
	bad.ID, bad.Chunks = 1, nil
	bad.AddChunk(2, math.MaxInt32+1)
	bad.OutputTokens = math.MaxInt32 + 1
	for _, r := range []record.Record{good, bad} {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	w.Close(false)
	_, recs, _, err := ReadAll(path)
	if err != nil {
		t.Fatalf("the reader refuses the writer's file: %v", err)
	}
	if len(recs) != 2 || recs[0].Status != record.StatusOK || recs[1].Status != record.StatusBadCount || recs[1].OutputTokens != 0 {
		t.Errorf("read %+v", recs)
	}
}
