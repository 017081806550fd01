package backend

import (
	"context"
	"math/rand/v2"
	"net"
	"time"
)

// Dial is the clients' default dial: 10 s to connect, and TCP keep-alive
// probes on timers spread over the connections. Thousands of connections
// dialled together and idle together (queued at the server, waiting for a
// first token) would probe together, each round at the same instant: on
// loopback the probes overflow the kernel's input queue
// (net.core.netdev_max_backlog, 1,000 by default), are lost round after
// round, and every connection is cut as dead at once ("connection timed
// out"; seen at 10,000 streams, 1,334 requests failed 167 s in).
func Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: -1}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetKeepAliveConfig(spreadKeepAlive())
	}
	return c, nil
}

// spreadKeepAlive is a connection's keep-alive: the first probe after 30 to
// 60 s idle, then one every 15 to 30 s, 9 unanswered cut it; each
// connection draws its own, so probes of connections opened together
// spread over seconds instead of coming in one burst.
func spreadKeepAlive() net.KeepAliveConfig {
	return net.KeepAliveConfig{
		Enable:   true,
		Idle:     30*time.Second + rand.N(30*time.Second),
		Interval: 15*time.Second + rand.N(15*time.Second),
		Count:    9,
	}
}
