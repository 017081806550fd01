package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/tokperf/tokperf/internal/bench"
)

func TestLiveMode(t *testing.T) {
	t.Parallel()
	file, err := os.Create(filepath.Join(t.TempDir(), "stderr.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, c := range []struct {
		name  string
		w     any
		quiet bool
		want  bench.ProgressMode
	}{
		{"a log file", file, false, bench.ProgressLines},
		{"quiet", file, true, bench.ProgressOff},
		{"a buffer", &bytes.Buffer{}, false, bench.ProgressOff},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got bench.ProgressMode
			switch w := c.w.(type) {
			case *os.File:
				got = liveMode(w, c.quiet)
			case *bytes.Buffer:
				got = liveMode(w, c.quiet)
			}
			if got != c.want {
				t.Errorf("mode %d, want %d", got, c.want)
			}
		})
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if got := liveMode(tty, false); got != bench.ProgressBars {
			t.Errorf("a terminal: mode %d, want bars", got)
		}
	}
}
