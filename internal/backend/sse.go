package backend

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// maxEvent bounds one line or event, per stream: a final event can carry a
// long text (8 MiB is some two million tokens of it), and a server that
// never ends a line costs each stream this much at most, not the memory of
// the machine (64 streams × 64 MiB died under a 4 GiB limit).
const maxEvent = 8 << 20

// errTooLong fails a request whose stream holds a line or event over
// maxEvent, saying so.
var errTooLong = fmt.Errorf("a line or event over %d MiB: the stream was cut there (a server that never ends a line?)", maxEvent>>20)

// tooLong names the scanner's error for a line over its buffer.
func tooLong(err error) error {
	if errors.Is(err, bufio.ErrTooLong) {
		return errTooLong
	}
	return err
}

// Events reads Server-Sent Events from a stream with the Scanner shape:
//
//	ev := NewEvents(body)
//	for ev.Next() {
//		use(ev.Data()) // valid until the next call to Next
//	}
//	err := ev.Err()
//
// Lines end in LF, CR or CRLF; "data:" with or without a space; comment lines
// (":") and other fields are skipped; several data lines join with LF. An
// event still open at the end of the stream is returned too, since some
// servers end without the blank line.
type Events struct {
	sc       *bufio.Scanner
	src      countingReader
	counter  readCounter // src, or the body when it counts its own reads
	data     []byte
	skipLF   bool // the last line ended in CR: a following LF belongs to it
	searched int  // bytes of the pending line already searched for its end
	buffered bool
	started  bool // Next was called before
	// rest is the bytes left in the buffer after the latest line; shared
	// says the event before the current one shared its read with bytes
	// after it (shares is the same for the current event, while its end
	// is still in doubt).
	rest           int
	shared, shares bool
	err            error
}

// readCounter is a reader that counts its reads from the connection.
type readCounter interface{ Reads() int }

// countingReader counts the reads from the connection, to tell an event
// that needed one from an event that was already waiting in the buffer.
// Over a body that counts its own reads (counter), it tells whether the
// first read after a mark was served from the body's buffer, without a
// read from the connection.
type countingReader struct {
	r       io.Reader
	n       int
	counter readCounter // the body's own count; nil: this one
	marked  bool        // the next read is the first after the mark
	held    bool        // it was served from the body's buffer
	// stamp, when set, notes when each read returned bytes (readStamper's
	// job, done here so a chunk's read is one call less).
	stamp *arrivals
}

func (c *countingReader) Read(p []byte) (int, error) {
	c.n++
	var n int
	var err error
	if !c.marked || c.counter == nil {
		c.marked = false
		n, err = c.r.Read(p)
	} else {
		c.marked = false
		before := c.counter.Reads()
		n, err = c.r.Read(p)
		c.held = n > 0 && c.counter.Reads() == before
	}
	if n > 0 && c.stamp != nil {
		c.stamp.read = c.stamp.clock.Now()
	}
	return n, err
}

func (c *countingReader) Reads() int { return c.n }

// mark starts watching the next read.
func (c *countingReader) mark() { c.marked, c.held = true, false }

// NewEvents reads events from r. Its buffer starts small (thousands of
// streams each hold one) and grows for long events.
func NewEvents(r io.Reader) *Events {
	e := &Events{src: countingReader{r: r}}
	e.counter = &e.src
	if s, ok := r.(*readStamper); ok {
		// Stamp the reads here and read the body itself: one call less
		// per read on the hot path.
		r = s.r
		e.src.r, e.src.stamp = r, s.a
	}
	if rc, ok := r.(readCounter); ok {
		// The lean client's body knows its reads from the connection, not
		// just the calls made to it.
		e.counter, e.src.counter = rc, rc
	}
	e.sc = bufio.NewScanner(&e.src)
	e.sc.Buffer(make([]byte, 0, 1<<10), maxEvent)
	e.sc.Split(e.split)
	return e
}

// Buffered reports whether the current event was complete in the buffer
// before Next was called: it arrived with or behind the previous one, so
// its timestamp is when the client got to it, not when it arrived. A
// client that keeps up sees few of these.
func (e *Events) Buffered() bool { return e.buffered }

// Shared reports whether the event before the current one (or the last
// event, once Next returned false) shared the read that completed it with
// bytes after it: any bytes, another event, a comment, half an event. Its
// arrival time is then that of those later bytes. It is known once Next
// has returned again: bytes still in the body's buffer show at the next
// read.
func (e *Events) Shared() bool { return e.shared }

// split returns one line ending in LF, CR or CRLF, without waiting for the
// byte after a CR (which would delay an event until the next one arrives).
func (e *Events) split(data []byte, atEOF bool) (int, []byte, error) {
	skip := 0
	if e.skipLF && len(data) > 0 {
		e.skipLF = false
		if data[0] == '\n' {
			skip = 1
		}
	}
	rest := data[skip:]
	// A long line comes in many reads: each search starts where the last
	// one stopped, or a 10 MB event would be searched thousands of times.
	from := min(e.searched, len(rest))
	if i := lineEnd(rest[from:]); i >= 0 {
		i += from
		e.searched = 0
		if rest[i] == '\r' {
			if i+1 < len(rest) {
				if rest[i+1] == '\n' {
					e.rest = len(rest) - i - 2
					return skip + i + 2, rest[:i], nil
				}
			} else {
				e.skipLF = true
			}
		}
		e.rest = len(rest) - i - 1
		return skip + i + 1, rest[:i], nil
	}
	if atEOF {
		e.searched, e.rest = 0, 0
		if len(rest) > 0 {
			return len(data), rest, nil
		}
		return len(data), nil, nil
	}
	e.searched = len(rest)
	if skip > 0 {
		return skip, nil, nil
	}
	return 0, nil, nil
}

// Next advances to the next event with data; false at the end or on error.
func (e *Events) Next() bool {
	e.data = e.data[:0]
	has := false
	reads := e.counter.Reads()
	first := !e.started
	e.started = true
	// The first event is never late: it is what the client waited for.
	defer func() { e.buffered = !first && e.counter.Reads() == reads }()
	// The event before shared its read with what followed it if bytes
	// were left in the buffer after it, or the first read after it was
	// served from the body's own buffer: settled when this call returns.
	prev := e.shares
	defer func() {
		e.shared = prev || e.src.held
		e.src.held = false
		e.shares = has && e.rest > 0
		if has && !e.shares {
			e.src.mark()
		}
	}()
	for e.sc.Scan() {
		line := e.sc.Bytes()
		if len(line) == 0 {
			if has {
				return true
			}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		if string(field) != "data" {
			continue
		}
		if len(e.data)+1+len(value) > maxEvent {
			// Data lines without a blank line between: one endless event.
			e.err = errTooLong
			return false
		}
		if has {
			e.data = append(e.data, '\n')
		}
		e.data = append(e.data, value...)
		has = true
	}
	e.err = tooLong(e.sc.Err())
	return has
}

// Data is the current event's data. The slice is reused by Next.
func (e *Events) Data() []byte { return e.data }

// Err is the first read error, nil at a clean end of stream.
func (e *Events) Err() error { return e.err }

// lineEnd is the index of the first CR or LF in b, or -1: two vectorised
// searches, where bytes.IndexAny would test every byte against a set.
func lineEnd(b []byte) int {
	lf := bytes.IndexByte(b, '\n')
	if lf < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if cr := bytes.IndexByte(b[:lf], '\r'); cr >= 0 {
		return cr
	}
	return lf
}
