package cli

import (
	"io"
	"os"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/term"
)

const quietHelp = "no live progress (by default each stage shows requests done, tok/s, errors, elapsed and ETA: redrawn in place on a terminal, a line every 5 s when stderr is a file or pipe)"

// liveMode is how stages show their progress on stderr: a bar redrawn in
// place on a terminal, plain lines when stderr is a file or a pipe (CI
// logs) or a terminal of no known size (a bar drawn 0 columns wide shows
// nothing), nothing with --quiet or when stderr is no file at all (a
// caller's buffer: tests, embedding).
func liveMode(stderr io.Writer, quiet bool) bench.ProgressMode {
	f, ok := term.Raw(stderr).(*os.File)
	if quiet || !ok {
		return bench.ProgressOff
	}
	fi, err := f.Stat()
	terminal := err == nil && fi.Mode()&os.ModeCharDevice != 0
	cols, _, known := termSize(f)
	return modeFor(terminal, cols, known)
}

// modeFor is the progress mode for stderr: bars on a terminal wide enough
// to draw one (the bar and its status need 40 columns), plain lines
// otherwise.
func modeFor(terminal bool, cols int, known bool) bench.ProgressMode {
	if terminal && known && cols >= 40 {
		return bench.ProgressBars
	}
	return bench.ProgressLines
}
