//go:build !linux

package backend

import "net"

// retransOf is not read off Linux.
func retransOf(net.Conn) (uint32, bool) { return 0, false }
