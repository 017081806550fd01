package cli

import (
	"io"
	"os"

	"github.com/tokperf/tokperf/internal/bench"
)

const quietHelp = "no live progress (by default each stage shows requests done, tok/s, errors, elapsed and ETA: redrawn in place on a terminal, a line every 5 s when stderr is a file or pipe)"

// liveMode is how stages show their progress on stderr: a bar redrawn in
// place on a terminal, plain lines when stderr is a file or a pipe (CI
// logs), nothing with --quiet or when stderr is no file at all (a caller's
// buffer: tests, embedding).
func liveMode(stderr io.Writer, quiet bool) bench.ProgressMode {
	f, ok := stderr.(*os.File)
	if quiet || !ok {
		return bench.ProgressOff
	}
	if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		return bench.ProgressBars
	}
	return bench.ProgressLines
}
