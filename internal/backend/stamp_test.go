//go:build linux && (amd64 || arm64 || riscv64 || ppc64le || s390x || loong64)

package backend

import (
	"io"
	"net"
	"testing"
	"time"
)

// loopbackPair is a connected TCP pair over loopback: the client side as
// dialled (wrapped by wrap) and the server side.
func loopbackPair(t testing.TB, wrap func(net.Conn) net.Conn) (client, server net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return wrap(c), s
}

// TestStampedArrival: bytes that sat in the socket while the client was
// busy are timed when they arrived, not when they were read.
//
// Serial: real time: kernel receive stamps within 20 ms of the write.
func TestStampedArrival(t *testing.T) {
	c, s := loopbackPair(t, withStamps)
	sc, ok := c.(*stampConn)
	if !ok {
		t.Skip("no kernel receive timestamps on this platform")
	}
	sent := time.Now()
	if _, err := s.Write([]byte("data: 1\n\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the client is busy elsewhere
	buf := make([]byte, 64)
	n, err := c.Read(buf)
	read := time.Now()
	if err != nil || string(buf[:n]) != "data: 1\n\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	at, ok := sc.Arrived()
	if !ok || sc.kernel.Load() == 0 {
		t.Skip("the kernel gave no receive timestamp") // e.g. disabled in a sandbox
	}
	arrived := stampEpoch.Add(at)
	if d := arrived.Sub(sent); d < 0 || d > 20*time.Millisecond {
		t.Errorf("timed %v after the write, want within 20 ms (the read came %v after)", d, read.Sub(sent))
	}
	// The end of the stream is io.EOF, as from any connection.
	s.Close()
	if n, err := c.Read(buf); n != 0 || err != io.EOF {
		t.Errorf("after close: %d, %v; want 0, EOF", n, err)
	}
}

func TestKernelTimeParsing(t *testing.T) {
	t.Parallel()
	if _, ok := kernelTime(nil); ok {
		t.Error("found a time in nothing")
	}
	// A header claiming more bytes than there are must not be read past.
	bad := make([]byte, 20)
	bad[0] = 200
	if _, ok := kernelTime(bad); ok {
		t.Error("found a time in a cut message")
	}
}

func FuzzKernelTime(f *testing.F) {
	f.Add(make([]byte, 32))
	f.Fuzz(func(t *testing.T, b []byte) { kernelTime(b) })
}

// BenchmarkConnRead reads 100-byte messages that are already waiting, with
// and without asking the kernel for their arrival time.
func BenchmarkConnRead(b *testing.B) {
	for _, tc := range []struct {
		name string
		wrap func(net.Conn) net.Conn
	}{{"plain", func(c net.Conn) net.Conn { return c }}, {"stamped", withStamps}} {
		b.Run(tc.name, func(b *testing.B) {
			c, s := loopbackPair(b, tc.wrap)
			msg := make([]byte, 100)
			go func() {
				big := make([]byte, 100*1000)
				for {
					if _, err := s.Write(big); err != nil {
						return
					}
				}
			}()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := io.ReadFull(c, msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSameSegment: reads of one segment, however many, get the segment's
// kernel time, not times that jitter by the nanoseconds between the wall
// and the monotonic clock readings of each read.
//
// Serial: real time: one TCP segment read after it is all in.
func TestSameSegment(t *testing.T) {
	c, s := loopbackPair(t, withStamps)
	sc, ok := c.(*stampConn)
	if !ok {
		t.Skip("no kernel receive timestamps on this platform")
	}
	if _, err := s.Write(make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // the whole segment is in
	buf := make([]byte, 10)
	var first time.Duration
	for i := range 100 {
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		at, _ := sc.Arrived()
		if i == 0 {
			first = at
		}
		if at != first {
			if sc.kernel.Load() < int64(i+1) {
				t.Skip("the kernel gave no receive timestamp") // timestamping off system-wide, or a sandbox
			}
			t.Fatalf("read %d of one segment arrived at %v, the first at %v", i, at, first)
		}
	}
}
