// Package term owns what tokperf writes for people: text that came from a
// server (model ids, error bodies, identity answers) may hold terminal
// control sequences (OSC 52 writes the clipboard, CSI clears the screen,
// OSC 0 sets the window title), and Writer shows each control character
// as its JSON escape instead of sending it. The command line wraps stdout
// and stderr in one, so every string reaches the terminal through it. A
// Writer also ends output, not the program, when its reader has gone
// (`tokperf … | head`).
//
//	w := term.NewWriter(os.Stdout) // "\x1b]52;c;…" arrives as `\u001b]52;c;…`
package term

import (
	"io"
	"sync"
)

const hex = "0123456789abcdef"

func escape(r rune) string { return `\u00` + string(hex[r>>4]) + string(hex[r&15]) }

// clean is how many bytes at the start of p hold no control character:
// C0 but tab and newline, DEL, or the lead byte 0xC2 that C1 characters
// start with in UTF-8 (the check on what follows it is left to the caller).
func clean(p []byte) int {
	for i, c := range p {
		if (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f || c == 0xc2 {
			return i
		}
	}
	return len(p)
}

// Writer passes writes through with every control character (C0 but tab
// and newline, DEL, C1) written as its JSON escape \u00XX, and swallows the first error and every write after it (a
// closed pipe ends tokperf's output, never its measurement); Err says
// which error that was. It is safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	pending bool // the last write ended in 0xC2, C1's lead byte
	err     error
}

// NewWriter returns a Writer over w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Raw is the writer under w when w is a Writer, else w: for what draws
// with escape sequences on purpose (progress bars) or writes bytes (PNG).
func Raw(w io.Writer) io.Writer {
	if t, ok := w.(*Writer); ok {
		return t.w
	}
	return w
}

// Err is the error that ended the output, or nil.
func (t *Writer) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// Write writes p, escaped; it reports all of p written even after the
// output ended, so that a writer above it carries on.
func (t *Writer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return len(p), nil
	}
	out := p
	if t.pending || clean(p) < len(p) {
		out = t.escape(p)
	}
	if len(out) > 0 {
		if _, err := t.w.Write(out); err != nil {
			t.err = err
		}
	}
	return len(p), nil
}

// escape is p with control characters escaped; a 0xC2 at its end is held
// until the next write says whether a C1 character follows.
func (t *Writer) escape(p []byte) []byte {
	out := make([]byte, 0, len(p)+16)
	if t.pending {
		t.pending = false
		if len(p) > 0 && p[0] >= 0x80 && p[0] <= 0x9f {
			out = append(out, escape(rune(p[0]))...)
			p = p[1:]
		} else {
			out = append(out, 0xc2)
		}
	}
	for len(p) > 0 {
		n := clean(p)
		out, p = append(out, p[:n]...), p[n:]
		if len(p) == 0 {
			break
		}
		switch c := p[0]; {
		case c != 0xc2:
			out, p = append(out, escape(rune(c))...), p[1:]
		case len(p) == 1:
			t.pending, p = true, nil
		case p[1] >= 0x80 && p[1] <= 0x9f:
			out, p = append(out, escape(rune(p[1]))...), p[2:]
		default:
			out, p = append(out, c), p[1:]
		}
	}
	return out
}
