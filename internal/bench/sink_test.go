package bench

import (
	"errors"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
)

// full takes room bytes, then fails as a full disk does.
type full struct{ room int }

func (f *full) Write(p []byte) (int, error) {
	if len(p) > f.room {
		return 0, errors.New("no space left on device")
	}
	f.room -= len(p)
	return len(p), nil
}

// The first failed write of the result file is said at once, while the run
// goes on, and once; the run's end returns it too.
func TestSinkSaysTheFirstFailedWriteAtOnce(t *testing.T) {
	t.Parallel()
	w, err := results.NewWriter(&full{room: 4 << 10}, "r.jsonl", results.Header{})
	if err != nil {
		t.Fatal(err)
	}
	var warn strings.Builder
	s := &sink{w: w, warn: &warn}
	rec := record.New(1)
	rec.Status = record.StatusOK
	said := -1
	for i := range 100 {
		s.write(rec)
		if said < 0 && warn.Len() > 0 {
			said = i
		}
	}
	if said < 0 || said > 50 || strings.Count(warn.String(), "no space left") != 1 || !strings.Contains(warn.String(), "the run goes on") {
		t.Errorf("said after record %d: %q; want it once, at the write that failed", said, warn.String())
	}
	if err := s.close(false); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("close: %v, want the first failure", err)
	}
}
