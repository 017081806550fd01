//go:build !(linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64))

package backend

import (
	"net"
	"time"
)

// Without kernel receive timestamps a chunk is timed when it is read.
type stampConn struct{ net.Conn }

var stampEpoch = time.Now()

func withStamps(c net.Conn) net.Conn { return c }

func (c *stampConn) Arrived() (time.Duration, bool) { return 0, false }

func (c *stampConn) arrivedAt() (time.Time, bool) { return time.Time{}, false }

func (c *stampConn) readWindow() (start, prevEnd time.Time, stamped bool) {
	return time.Time{}, time.Time{}, false
}

// closedByPeer is not known here: a request sent on a closed connection
// is retried once instead.
func closedByPeer(net.Conn) bool { return false }
