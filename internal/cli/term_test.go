package cli

import (
	"testing"

	"github.com/tokperf/tokperf/internal/bench"
)

// A terminal whose size is unknown or 0×0 (a pty nobody sized) gets plain
// lines: a bar drawn 0 columns wide would show nothing for a whole stage.
func TestProgressModeFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		terminal bool
		cols     int
		known    bool
		want     bench.ProgressMode
	}{
		{"terminal 120 wide", true, 120, true, bench.ProgressBars},
		{"pty of 0x0", true, 0, true, bench.ProgressLines},
		{"terminal of unknown size", true, 0, false, bench.ProgressLines},
		{"narrow terminal", true, 20, true, bench.ProgressLines},
		{"pipe", false, 0, false, bench.ProgressLines},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := modeFor(c.terminal, c.cols, c.known); got != c.want {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
