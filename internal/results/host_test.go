package results

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// A stage's host reading and a slice's come back as written; a host line
// with a negative reading or an inverted window is refused naming the
// line; a file without host lines (written before they were) reads none.
func TestHostLines(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "r.jsonl")
	w, err := Create(path, Header{Tool: "tokperf", Setup: record.Setup{Command: "sweep"}})
	if err != nil {
		t.Fatal(err)
	}
	h := record.Host{Stage: 1, From: time.Second, To: 3 * time.Second, CPURunS: 1.5, CPUWaitS: 0.5, PressureS: 1.2, Steal: 0.01, Retrans: 3, Known: []string{"schedstat", "pressure", "stat", "tcp_info"}}
	sl := record.Slice{Stage: 1, From: time.Second, To: 2 * time.Second, Requests: 1, OK: 1, Host: &h}
	if err := w.WriteSlice(sl); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteHost(h); err != nil {
		t.Fatal(err)
	}
	w.Close(false)
	r, f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for r.Next() {
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if got := r.Hosts(); len(got) != 1 || !reflect.DeepEqual(got[0], h) {
		t.Errorf("hosts %+v, want %+v", got, h)
	}
	if got := r.Slices(); len(got) != 1 || got[0].Host == nil || !reflect.DeepEqual(*got[0].Host, h) {
		t.Errorf("slices %+v, want the host reading %+v", got, h)
	}
	head := `{"type":"header","format":"tokperf-results/1","tool":"tokperf","setup":{"command":"sweep"}}` + "\n"
	for _, bad := range []string{
		`{"type":"host","stage":0,"from_ns":5,"to_ns":1}`,
		`{"type":"host","stage":0,"from_ns":0,"to_ns":1,"cpu_wait_s":-1}`,
		`{"type":"host","stage":0,"from_ns":0,"to_ns":1,"steal":2}`,
	} {
		r := NewReader(strings.NewReader(head+bad+"\n"), "bad.jsonl")
		for r.Next() {
		}
		if r.Err() == nil || !strings.Contains(r.Err().Error(), "bad.jsonl line 2: host: ") {
			t.Errorf("%s: error %v, want one naming line 2's host reading", bad, r.Err())
		}
	}
	r = NewReader(strings.NewReader(head), "old.jsonl")
	for r.Next() {
	}
	if r.Err() != nil || len(r.Hosts()) != 0 {
		t.Errorf("a file without host lines: %v, %d hosts", r.Err(), len(r.Hosts()))
	}
}
