package backend

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"testing/synctest"
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
	t.Parallel()
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

// TestVirtualTime: in a test's virtual time (testing/synctest, as the
// CLI's tests run the simulator) over in-memory pipes, the lean client's
// read times are on the request's clock: not years off from a real-time
// epoch.
func TestVirtualTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, s := net.Pipe()
			go func() {
				defer s.Close()
				br := bufio.NewReader(s)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					time.Sleep(10 * time.Millisecond) // the first token
					if _, err := s.Write(response(3)); err != nil {
						return
					}
				}
			}()
			return c, nil
		}
		for _, netHTTP := range []bool{false, true} {
			b, err := New(Config{URL: "http://sim:1", Endpoint: "completions", Conns: 1, Dial: dial, NetHTTP: netHTTP})
			if err != nil {
				t.Fatal(err)
			}
			rec := record.New(1)
			b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 3}, &rec)
			b.Close()
			ttft := rec.FirstToken - rec.Sent
			if !rec.OK() || ttft != 10*time.Millisecond || rec.Done < rec.LastToken || rec.Done-rec.Sent > time.Second {
				t.Errorf("net/http %v: %s %s, TTFT %v, last token %v, done %v: want TTFT 10ms in virtual time", netHTTP, rec.Status, rec.Error, ttft, rec.LastToken, rec.Done)
			}
		}
	})
}
