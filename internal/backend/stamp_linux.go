//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64)

package backend

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// stampConn is a TCP connection that asks the kernel when the bytes of
// each read reached this machine (SO_TIMESTAMPNS), so a chunk is timed on
// arrival, not when a busy client got round to reading it: with a thousand
// streams waking at once, the last of them is read milliseconds after its
// bytes came in. Where a read returns no kernel time, the read is the time.
type stampConn struct {
	tcp *net.TCPConn
	raw syscall.RawConn

	// The read in progress; one goroutine reads at a time.
	p       []byte
	n, oobn int
	err     error
	oob     [64]byte
	recvFn  func(fd uintptr) bool
	arrived atomic.Int64 // the latest bytes' arrival, ns since stampEpoch; 0 before any
	kernel  atomic.Int64 // reads that carried a kernel time
	ts      int64        // the latest kernel time, ns since 1970
	// The latest read that returned bytes: when it began and ended, the
	// end of the one before, in ns since stampEpoch (0: none), and
	// whether it carried a kernel time.
	began, ended, before atomic.Int64
	stamped              atomic.Bool
}

// stampEpoch anchors arrivals on the monotonic clock.
var stampEpoch = time.Now()

// withStamps turns on receive timestamps for a TCP connection; anything
// else, or a kernel that refuses, is returned as it is.
func withStamps(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil || serr != nil {
		return c
	}
	s := &stampConn{tcp: tc, raw: raw}
	s.recvFn = s.recv // bound once: a method value per read would allocate
	return s
}

func (c *stampConn) recv(fd uintptr) bool {
	for {
		c.n, c.oobn, _, _, c.err = syscall.Recvmsg(int(fd), c.p, c.oob[:], 0)
		if c.err == nil {
			return true // bytes or the end: the common case, without comparing errors
		}
		if c.err != syscall.EINTR {
			return c.err != syscall.EAGAIN
		}
	}
}

func (c *stampConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.p = p
	began := time.Since(stampEpoch)
	err := c.raw.Read(c.recvFn)
	c.p = nil
	if err == nil && c.err != nil {
		err = os.NewSyscallError("recvmsg", c.err)
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: c.tcp.LocalAddr(), Addr: c.tcp.RemoteAddr(), Err: err}
	}
	if c.n == 0 {
		return 0, io.EOF
	}
	now := time.Now()
	at := now.Sub(stampEpoch)
	prev := time.Duration(c.arrived.Load())
	c.before.Store(c.ended.Load())
	c.began.Store(int64(max(began, 1)))
	c.ended.Store(int64(max(at, 1)))
	c.stamped.Store(false)
	if ts, ok := kernelTime(c.oob[:c.oobn]); ok {
		// Both are wall-clock readings taken microseconds apart, so a
		// slow clock adjustment cannot matter; a step can, and is ignored.
		if lag := now.Sub(ts); lag >= 0 && lag < time.Minute {
			at -= lag
			c.kernel.Add(1)
			c.stamped.Store(true)
			// Reads of the same segment carry the same kernel time: they
			// get the same arrival, not one that jitters by the
			// nanoseconds between the two clock readings.
			if ts.UnixNano() == c.ts && prev > 0 {
				at = prev
			}
			c.ts = ts.UnixNano()
		}
	}
	// Arrivals never go backwards on a connection (a read without a
	// kernel time is timed by the read, which may be before the kernel
	// time of a segment read earlier, by the clocks' jitter).
	c.arrived.Store(int64(max(at, prev, 1)))
	return c.n, nil
}

// Arrived is when the latest bytes read reached this machine, as an
// offset from stampEpoch; false before the first read.
func (c *stampConn) Arrived() (time.Duration, bool) {
	at := c.arrived.Load()
	return time.Duration(at), at != 0
}

// arrivedAt is Arrived as a time on the monotonic clock.
func (c *stampConn) arrivedAt() (time.Time, bool) {
	at, ok := c.Arrived()
	return stampEpoch.Add(at), ok
}

// readWindow is when the latest read that returned bytes began and when
// the read before it ended (zero for the first), and whether it carried a
// kernel time.
func (c *stampConn) readWindow() (start, prevEnd time.Time, stamped bool) {
	start = stampEpoch.Add(time.Duration(c.began.Load()))
	if b := c.before.Load(); b != 0 {
		prevEnd = stampEpoch.Add(time.Duration(b))
	}
	return start, prevEnd, c.stamped.Load()
}

// kernelTime finds SCM_TIMESTAMPNS in a control message buffer (64-bit
// layout: an 8-byte length, level, type, then a timespec).
func kernelTime(b []byte) (time.Time, bool) {
	const hdr = syscall.SizeofCmsghdr
	for len(b) >= hdr {
		l := int(binary.NativeEndian.Uint64(b))
		level, typ := int32(binary.NativeEndian.Uint32(b[8:])), int32(binary.NativeEndian.Uint32(b[12:]))
		if l < hdr || l > len(b) {
			break
		}
		if level == syscall.SOL_SOCKET && typ == syscall.SCM_TIMESTAMPNS && l >= hdr+16 {
			sec, nsec := int64(binary.NativeEndian.Uint64(b[hdr:])), int64(binary.NativeEndian.Uint64(b[hdr+8:]))
			return time.Unix(sec, nsec), true
		}
		b = b[min((l+7)&^7, len(b)):]
	}
	return time.Time{}, false
}

func (c *stampConn) Write(p []byte) (int, error)           { return c.tcp.Write(p) }
func (c *stampConn) SyscallConn() (syscall.RawConn, error) { return c.raw, nil }
func (c *stampConn) Close() error                          { return c.tcp.Close() }
func (c *stampConn) LocalAddr() net.Addr                   { return c.tcp.LocalAddr() }
func (c *stampConn) RemoteAddr() net.Addr                  { return c.tcp.RemoteAddr() }
func (c *stampConn) SetDeadline(t time.Time) error         { return c.tcp.SetDeadline(t) }
func (c *stampConn) SetReadDeadline(t time.Time) error     { return c.tcp.SetReadDeadline(t) }
func (c *stampConn) SetWriteDeadline(t time.Time) error    { return c.tcp.SetWriteDeadline(t) }

// closedByPeer reports whether an idle connection was closed by the
// server (or holds bytes no request asked for): one peek that never
// waits, so a request is not sent on a connection already gone.
func closedByPeer(c net.Conn) bool {
	var raw syscall.RawConn
	switch c := c.(type) {
	case *stampConn:
		raw = c.raw
	case *net.TCPConn:
		r, err := c.SyscallConn()
		if err != nil {
			return false
		}
		raw = r
	default:
		return false
	}
	var b [1]byte
	var err error
	if raw.Control(func(fd uintptr) {
		_, _, err = syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	}) != nil {
		return true
	}
	// EOF (0 bytes, no error), stray bytes, or an error: not reusable.
	return err != syscall.EAGAIN
}
