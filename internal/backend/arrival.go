package backend

import (
	"io"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// Arrival stamping: when a response's bytes reached this machine, from
// the connection's receive timestamps where it has them, and whether the
// client read them late.

// stamper times what a stream reads; record.Clock is one.
type stamper interface{ Now() time.Duration }

// arrivals times a response's chunks by when their bytes reached this
// machine, from the connection's receive timestamps where it has them,
// else by the clock when they were read (not when they were parsed: the
// events of one read share its time). Its times never go backwards within
// a request, whichever of the two gave them.
type arrivals struct {
	clock record.Clock
	conn  arriver       // nil where the connection is not known
	read  time.Duration // when the latest body bytes were read; 0 before any
	last  time.Duration // the latest time given
}

func (a *arrivals) Now() time.Duration {
	var at time.Duration
	if a.conn != nil {
		if t, ok := a.conn.arrivedAt(); ok {
			at = max(t.Sub(a.clock.Start()), 1)
		}
	}
	if at == 0 {
		at = a.read
	}
	if at == 0 {
		at = a.clock.Now()
	}
	at = max(at, a.last)
	a.last = at
	return at
}

// promptLimit is how soon after its bytes arrived a read must come for the
// events it brings together to count as the server's doing, not the
// client's lag.
const promptLimit = time.Millisecond

// lag counts the token chunks stamped with an arrival not their own: a
// token chunk whose read brought bytes after it too (another token chunk,
// a usage event, [DONE], a comment, half of the next event) is timed by
// that read, whose newest bytes are the later ones'. Whether it was is
// known at the next event (Events.Shared); whether the read was prompt
// (the server's coalescing, not the client's lag) is known at the chunk
// itself, while the read that brought it is the latest.
type lag struct{ pending, prompt bool }

// next notes the event Events.Next just returned, and whether the event
// before it shared its read (Events.Shared); call it for every event
// before anything else.
func (l *lag) next(shared bool, rec *record.Record) {
	if l.pending && shared {
		if l.prompt {
			rec.Coalesced++
		} else {
			rec.Buffered++
		}
	}
	l.pending = false
}

// chunk notes that the current event carried tokens, and whether the
// read that brought it was prompt.
func (l *lag) chunk(clock stamper) {
	a, ok := clock.(*arrivals)
	l.pending, l.prompt = true, ok && a.prompt()
}

// prompt says the events of the latest read arrived together, so their
// shared arrival is true (the server wrote them together): the read came
// within promptLimit of the arrival of its newest bytes, and either it
// was already waiting when they arrived (a read that waits returns the
// first bytes to come: earlier ones would have come alone) or the client
// had been away from reading for no more than promptLimit before it (so
// nothing can have waited longer). A chunk that arrived 8 ms before the
// next, read together with it by a client away for those 8 ms, is the
// client's lag. The arrival is the kernel's stamp where the read had one,
// and the read waited if the stamp is not before it began; without a
// stamp it is when the read returned, and the read waited if it returned
// waitMin or more after it began. False where the connection is unknown.
func (a *arrivals) prompt() bool {
	if a.conn == nil || a.read == 0 {
		return false
	}
	t, ok := a.conn.arrivedAt()
	start, prevEnd, kernel := a.conn.readWindow()
	if !ok || start.IsZero() || a.read-t.Sub(a.clock.Start()) > promptLimit {
		return false
	}
	waited := t.Sub(start) >= waitMin
	if kernel {
		waited = !t.Before(start.Add(-waitMin))
	}
	return waited || !prevEnd.IsZero() && start.Sub(prevEnd) <= promptLimit
}

// waitMin is how far a kernel stamp may fall before the read that waited
// for its bytes began (the two clocks are read microseconds apart), and,
// without a stamp, how long a read must have taken to have waited.
const waitMin = 50 * time.Microsecond

// arriver is a connection that knows when the bytes it read last reached
// this machine (a time with its monotonic reading, so that a clock in a
// test's virtual time reads it right too), and when that read began and
// the one before it ended.
type arriver interface {
	arrivedAt() (time.Time, bool)
	// readWindow is when the latest read that returned bytes began and
	// when the read before it ended (zero for the first); stamped false
	// when that read carried no kernel arrival time.
	readWindow() (start, prevEnd time.Time, stamped bool)
}

// readStamper notes in its arrivals when each read of a body returned
// bytes, and passes on the body's count of connection reads.
type readStamper struct {
	r  io.Reader
	a  *arrivals
	n  int
	rc readCounter // r, where it counts its own reads
}

func (s *readStamper) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.n++
	if n > 0 {
		s.a.read = s.a.clock.Now()
	}
	return n, err
}

func (s *readStamper) Reads() int {
	if s.rc != nil {
		return s.rc.Reads()
	}
	return s.n
}
