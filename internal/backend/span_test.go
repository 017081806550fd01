package backend

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// plainConn hides a TCP connection's type, so it gets no kernel stamps.
type plainConn struct{ net.Conn }

// TestOneWriteStream: a whole stream in one write (a buffering proxy)
// arrives at one instant: its chunks share one time, never go backwards,
// and its decode speed is undefined, not billions of tokens per second.
// Without kernel stamps the events of one read share the read's time;
// with them (TestSameSegment) every read of the one segment has its time.
func TestOneWriteStream(t *testing.T) {
	stamped := cannedServer(t, response(20))
	small := cannedServer(t, response(3))
	plain := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return plainConn{c}, err
	}
	for _, tc := range []struct {
		name   string
		url    string
		dial   func(ctx context.Context, network, addr string) (net.Conn, error)
		tokens int
	}{
		{"kernel stamps", stamped, nil, 20},
		{"read times", small, plain, 3},
	} {
		for _, netHTTP := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "/lean", true: "/net-http"}[netHTTP], func(t *testing.T) {
				b, err := New(Config{URL: tc.url, Endpoint: "completions", Conns: 1, NetHTTP: netHTTP, Dial: tc.dial})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				undefined := 0
				for i := range 20 {
					rec := record.New(i)
					b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: tc.tokens}, &rec)
					if !rec.OK() || len(rec.Chunks) != tc.tokens {
						t.Fatalf("status %q (%s), %d chunks", rec.Status, rec.Error, len(rec.Chunks))
					}
					for j := 1; j < len(rec.Chunks); j++ {
						if rec.Chunks[j].At < rec.Chunks[j-1].At {
							t.Fatalf("request %d: chunk %d at %v, before chunk %d at %v", i, j, rec.Chunks[j].At, j-1, rec.Chunks[j-1].At)
						}
					}
					if rec.FirstByte > rec.FirstToken || rec.LastToken > rec.Done {
						t.Errorf("request %d: first byte %v, first token %v, last token %v, done %v: out of order", i, rec.FirstByte, rec.FirstToken, rec.LastToken, rec.Done)
					}
					if d, n, ok := rec.DecodeSpan(); !ok && d == 0 {
						undefined++
					} else {
						t.Logf("request %d: decode time %v for %d tokens (defined %v)", i, d, n, ok)
					}
				}
				// The kernel stamps only while timestamping is on system-wide
				// (switched on and off lazily as sockets ask for it); else a
				// chunk has its read's time, and one write takes two reads.
				if tc.dial != nil && undefined < 20 {
					t.Errorf("%d of 20 streams read at once had no decode time (undefined decode speed): want all", undefined)
				}
			})
		}
	}
}

// TestSameSegment: reads of one segment, however many, get the segment's
// kernel time, not times that jitter by the nanoseconds between the wall
// and the monotonic clock readings of each read.
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
