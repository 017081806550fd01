package sim

import (
	"net"
	"testing"

	"golang.org/x/sys/unix"
)

// The simulator's connections carry no keep-alive probes: thousands of
// streams queued together would be probed in one burst per round and, on
// loopback, cut as dead when the kernel's input queue overflows.
func TestListenNoKeepAlive(t *testing.T) {
	t.Parallel()
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw, err := s.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var on int
	var gerr error
	raw.Control(func(fd uintptr) { on, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_KEEPALIVE) })
	if gerr != nil || on != 0 {
		t.Errorf("SO_KEEPALIVE %d (%v) on an accepted connection: want off", on, gerr)
	}
}
