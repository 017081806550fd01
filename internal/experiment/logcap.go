package experiment

import (
	"fmt"
	"io"
	"sync"
)

// logKeep is how much of a server's log is kept at each end: its start
// (how it came up) and its end (how it failed). The middle of a log that
// grows without bound goes (3.2 GB from one short configuration filled the
// disk and failed the next, healthy one).
const logKeep = 8 << 20

// capped writes the first keep bytes to w as they come and holds the last
// keep bytes of the rest, written after a note of what was cut when it
// closes. Safe for concurrent use (a server's stdout and stderr).
type capped struct {
	mu      sync.Mutex
	w       io.WriteCloser
	keep    int
	written int
	tail    []byte
	cut     int64
}

func newCapped(w io.WriteCloser, keep int) *capped { return &capped{w: w, keep: keep} }

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if head := min(len(p), c.keep-c.written); head > 0 {
		if _, err := c.w.Write(p[:head]); err != nil {
			return 0, err
		}
		c.written += head
		p = p[head:]
	}
	if len(p) == 0 {
		return n, nil
	}
	c.tail = append(c.tail, p...)
	if over := len(c.tail) - c.keep; over >= c.keep {
		// Drop from the front in large steps: each byte is copied about
		// once.
		c.cut += int64(over)
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
	return n, nil
}

// Close writes what the tail holds, after the note of the cut, and closes w.
func (c *capped) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if over := len(c.tail) - c.keep; over > 0 {
		c.cut += int64(over)
		c.tail = c.tail[over:]
	}
	if c.cut > 0 {
		fmt.Fprintf(c.w, "\n[tokperf: %d bytes of this log cut here; it keeps the first and the last %d MiB]\n", c.cut, c.keep>>20)
	}
	_, err := c.w.Write(c.tail)
	if cerr := c.w.Close(); err == nil {
		err = cerr
	}
	return err
}
