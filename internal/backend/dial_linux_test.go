package backend

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// Connections dialled together probe on timers of their own: their first
// keep-alive probes fall within 30 to 60 s of idle, spread, not at one
// instant (10,000 streams probing together lose their probes on loopback
// and are cut as dead).
func TestDialSpreadsKeepAlive(t *testing.T) {
	t.Parallel()
	ln := silentServer(t)
	idles := map[int]bool{}
	for range 20 {
		c, err := Dial(t.Context(), "tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		on, idle, intvl := sockopt(t, c, unix.SOL_SOCKET, unix.SO_KEEPALIVE), sockopt(t, c, unix.IPPROTO_TCP, unix.TCP_KEEPIDLE), sockopt(t, c, unix.IPPROTO_TCP, unix.TCP_KEEPINTVL)
		if on != 1 || idle < 30 || idle > 60 || intvl < 15 || intvl > 30 {
			t.Fatalf("keep-alive %d, idle %d s, interval %d s: want on, 30-60 s, 15-30 s (whole seconds)", on, idle, intvl)
		}
		idles[idle] = true
	}
	if len(idles) < 5 {
		t.Errorf("20 connections probe after %d distinct idle times: their probes come in bursts", len(idles))
	}
}

// sockopt reads an integer socket option of a TCP connection.
func sockopt(t *testing.T, c net.Conn, level, opt int) int {
	t.Helper()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := raw.Control(func(fd uintptr) { v, gerr = unix.GetsockoptInt(int(fd), level, opt) }); err != nil || gerr != nil {
		t.Fatalf("getsockopt: %v %v", err, gerr)
	}
	return v
}
