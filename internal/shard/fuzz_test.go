package shard

import (
	"strings"
	"testing"
)

// FuzzBarrierFiles: whatever a barrier file holds, reading it never
// panics; one that reads has the fields a shard relies on in range, and
// an error names the file.
func FuzzBarrierFiles(f *testing.F) {
	f.Add([]byte(`{"run_id":"job1","shard":2,"shards":4,"host":"node-2","at_unix_ns":1796144400000000000}`))
	f.Add([]byte(`{"run_id":"job1","shards":4,"stage":0,"start_unix_ns":1796144402000000000,"written_unix_ns":1796144400000000000}`))
	f.Add([]byte(`{"run_id":"job1","shard":4,"shards":4,"at_unix_ns":1}`))
	f.Add([]byte(`{"run_id":"job1","shard":0,"shards":1,"at_unix_ns":1}{}`))
	f.Add([]byte("\x00"))
	f.Fuzz(func(t *testing.T, in []byte) {
		if s, err := parseBarrierShard("DIR/shard-0", in); err == nil {
			if s.RunID == "" || s.Shards < 1 || s.Shard < 0 || s.Shard >= s.Shards || s.AtUnixNs <= 0 {
				t.Errorf("read %+v", s)
			}
		} else if !strings.HasPrefix(err.Error(), "DIR/shard-0: ") {
			t.Errorf("error %q does not name the file", err)
		}
		if s, err := parseBarrierStart("DIR/start", in); err == nil {
			if s.RunID == "" || s.Shards < 1 || s.Stage < 0 || s.StartUnixNs <= 0 || s.WrittenUnixNs <= 0 {
				t.Errorf("read %+v", s)
			}
		} else if !strings.HasPrefix(err.Error(), "DIR/start: ") {
			t.Errorf("error %q does not name the file", err)
		}
	})
}
