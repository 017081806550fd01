//go:build unix

package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// termSize is the terminal's columns and rows; ok false when the terminal
// does not say.
func termSize(f *os.File) (cols, rows int, ok bool) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0, false
	}
	return int(ws.Col), int(ws.Row), true
}
