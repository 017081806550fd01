package experiment

import (
	"os"
	"strings"
	"testing"
	"time"
)

// A server that logs without end leaves a log of its first and last
// logKeep bytes with a note of the cut between them; a short log is kept
// whole.
func TestServerLogCapped(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, cmd string
		cut       bool
	}{
		{"endless", "echo START; head -c 40000000 /dev/zero | tr '\\0' x; echo; echo END", true},
		{"short", "echo START; echo END", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := Start(Config{Name: "chatty", Command: []string{tc.cmd}, Shell: true}, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.Done():
			case <-time.After(time.Minute):
				p.Stop(time.Second)
				t.Fatal("still running after a minute")
			}
			b, err := os.ReadFile(p.Log)
			if err != nil {
				t.Fatal(err)
			}
			s := string(b)
			if !strings.HasPrefix(s, "START\n") || !strings.HasSuffix(s, "\nEND\n") {
				t.Errorf("log of %d bytes starts %.20q and ends %q: want its head and its tail", len(s), s, s[max(0, len(s)-20):])
			}
			if cut := strings.Contains(s, "bytes of this log cut here"); cut != tc.cut || len(s) > 2*logKeep+200 {
				t.Errorf("log of %d bytes, note of a cut %v: want at most %d bytes, a note %v", len(s), cut, 2*logKeep+200, tc.cut)
			}
		})
	}
}
