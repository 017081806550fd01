// Package memnet is an in-memory network of net.Pipe connections, so a
// client and the simulator can talk real HTTP inside a testing/synctest
// bubble, where time is virtual and a minute-long sweep takes a moment.
//
//	n := memnet.New()
//	go srv.Serve(ctx, n)                      // n is a net.Listener
//	client := backend.NewClient(8, n.Dial)
package memnet

import (
	"context"
	"net"
	"sync"
)

// Net is a listener whose Dial makes a connected pipe.
type Net struct {
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

// New makes a network; create it inside the bubble that uses it.
func New() *Net { return &Net{conns: make(chan net.Conn), closed: make(chan struct{})} }

type addr struct{}

func (addr) Network() string { return "memnet" }
func (addr) String() string  { return "127.0.0.1:8000" }

// Accept waits for the next Dial.
func (n *Net) Accept() (net.Conn, error) {
	select {
	case c := <-n.conns:
		return c, nil
	case <-n.closed:
		return nil, net.ErrClosed
	}
}

// Close stops accepting.
func (n *Net) Close() error {
	n.closeOnce.Do(func() { close(n.closed) })
	return nil
}

// Addr is a fixed loopback-looking address.
func (n *Net) Addr() net.Addr { return addr{} }

// Dial connects to the listener, whatever the address.
func (n *Net) Dial(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case n.conns <- server:
		return client, nil
	case <-n.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
