package backend

import (
	"context"
	"net"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
)

// plainConn hides a TCP connection's type, so it gets no kernel stamps.
type plainConn struct{ net.Conn }

// TestOneWriteStream: a whole stream in one write (a buffering proxy)
// arrives at one instant: its chunks share one time, never go backwards,
// and its decode speed is undefined, not billions of tokens per second.
// With kernel stamps every read of the one segment has the segment's
// time; without them, the events of one read share the read's time.
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
					// On a loaded machine the kernel may now and then split
					// the write in two segments that do arrive apart.
					if d, n, ok := rec.DecodeSpan(); !ok && d == 0 {
						undefined++
					} else {
						t.Logf("request %d: decode time %v for %d tokens (defined %v)", i, d, n, ok)
					}
				}
				if undefined < 10 {
					t.Errorf("%d of 20 streams written at once had no decode time (undefined decode speed): want most", undefined)
				}
			})
		}
	}
}
