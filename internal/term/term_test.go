package term

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// Control sequences arrive as text, whichever way the writes cut them;
// what is not a control character (tabs, newlines, other languages, a
// character whose UTF-8 starts like C1's) passes unchanged.
func TestWriterEscapes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, in, want string }{
		{"clipboard", "model \x1b]52;c;cm0gLXJmIH4=\x07 ok\n", `model \u001b]52;c;cm0gLXJmIH4=\u0007 ok` + "\n"},
		{"clear", "\x1b[2J\x1b[H", `\u001b[2J\u001b[H`},
		{"title", "\x1b]0;pwned\x1b\\", `\u001b]0;pwned\u001b\`},
		{"C1 CSI", "a\u009b31mb", `a\u009b31mb`},
		{"return and DEL", "x\ry\x7f", `x\u000dy\u007f`},
		{"plain", "C=8\t12.5 tok/s — £3 日本\n", "C=8\t12.5 tok/s — £3 日本\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for cut := range len(c.in) + 1 {
				var b bytes.Buffer
				w := NewWriter(&b)
				w.Write([]byte(c.in[:cut]))
				w.Write([]byte(c.in[cut:]))
				if b.String() != c.want {
					t.Fatalf("written in two at %d: %q, want %q", cut, b.String(), c.want)
				}
			}
		})
	}
}

type closed struct{ n int }

func (c *closed) Write(p []byte) (int, error) { c.n++; return 0, errors.New("broken pipe") }

// A reader that went away ends the output: the first error is kept, the
// writer under it is not written again, and every write reports success
// so that the program goes on measuring.
func TestWriterEndsOnError(t *testing.T) {
	t.Parallel()
	c := &closed{}
	w := NewWriter(c)
	for range 3 {
		if n, err := w.Write([]byte("line\n")); n != 5 || err != nil {
			t.Fatalf("Write = %d, %v; want 5, nil", n, err)
		}
	}
	if c.n != 1 || w.Err() == nil || !strings.Contains(w.Err().Error(), "broken pipe") {
		t.Errorf("%d writes under it, Err %v; want 1 and the broken pipe", c.n, w.Err())
	}
	if Raw(w) != c || Raw(c) != c {
		t.Error("Raw does not give the writer under it")
	}
}
