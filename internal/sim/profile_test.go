package sim

import (
	"strings"
	"testing"
)

// The options added to profiles are off by default and checked with the
// file, line and field named.
func TestProfileOptionErrors(t *testing.T) {
	const base = "name: t\ndecode:\n  linear: {a_ms: 1, c_ms: 0}\nprefill:\n  per_token_us: 1\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"events-per-write-negative", "wire:\n  events_per_write: -1\n", "t.yaml:7: wire.events_per_write: must be 0..1000, got -1"},
		{"events-per-write-huge", "wire:\n  events_per_write: 5000\n", "t.yaml:7: wire.events_per_write: must be 0..1000"},
		{"tool-calls-not-bool", "wire:\n  tool_calls: maybe\n", "t.yaml:7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseProfile("t.yaml", []byte(base+tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	p, err := ParseProfile("t.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Wire; w != (Wire{}) {
		t.Errorf("a profile without options has wire %+v, want all off", w)
	}
}
