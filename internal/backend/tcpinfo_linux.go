//go:build linux

package backend

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// retransOf is the TCP segments the connection has sent again so far
// (TCP_INFO's total_retrans); false where it cannot be read.
func retransOf(c net.Conn) (uint32, bool) {
	sc, ok := c.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	if !ok {
		return 0, false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info *unix.TCPInfo
	var gerr error
	if err := raw.Control(func(fd uintptr) { info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || gerr != nil {
		return 0, false
	}
	return info.Total_retrans, true
}
