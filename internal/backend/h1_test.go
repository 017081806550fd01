package backend

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// readConn is a connection that only reads, from r.
type readConn struct {
	net.Conn
	r io.Reader
}

func (c readConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func testConn(r io.Reader) *h1Conn {
	return &h1Conn{nc: readConn{r: r}, buf: make([]byte, h1BufSize)}
}

// randomReads returns what r holds in reads of 1 to max bytes.
type randomReads struct {
	r   io.Reader
	rnd *rand.Rand
	max int
}

func (s *randomReads) Read(p []byte) (int, error) {
	n := 1 + s.rnd.IntN(s.max)
	return s.r.Read(p[:min(n, len(p))])
}

// chunked frames body as HTTP/1.1 chunks of random sizes, some with
// extensions and upper-case hex, and ends it with trailers.
func chunked(body []byte, rnd *rand.Rand) []byte {
	var b bytes.Buffer
	for len(body) > 0 {
		n := min(len(body), 1+rnd.IntN(300))
		size := fmt.Sprintf("%x", n)
		if rnd.IntN(2) == 0 {
			size = strings.ToUpper(size)
		}
		b.WriteString(size)
		if rnd.IntN(4) == 0 {
			b.WriteString(";ext=1")
		}
		b.WriteString("\r\n")
		b.Write(body[:n])
		b.WriteString("\r\n")
		body = body[n:]
	}
	b.WriteString("0\r\n")
	if rnd.IntN(2) == 0 {
		b.WriteString("X-Trailer: t\r\n")
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// Every body comes back byte for byte whatever the chunking and however
// the bytes are split into reads, and the next response on the connection
// starts where this one ended.
func FuzzH1Body(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[{\"text\":\" a\"}]}\n\n"), uint64(1), uint8(3))
	f.Add([]byte{}, uint64(2), uint8(1))
	f.Add(bytes.Repeat([]byte("x\r\n0\r\n\r\n"), 500), uint64(3), uint8(200))
	f.Fuzz(checkH1Body)
}

func checkH1Body(t *testing.T, body []byte, seed uint64, maxRead uint8) {
	{
		rnd := rand.New(rand.NewPCG(seed, seed^0x9e37))
		for _, framing := range []string{"chunked", "length", "close"} {
			var in bytes.Buffer
			switch framing {
			case "chunked":
				in.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
				in.Write(chunked(body, rnd))
			case "length":
				fmt.Fprintf(&in, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", len(body))
				in.Write(body)
			case "close":
				in.WriteString("HTTP/1.1 200 OK\r\n\r\n")
				in.Write(body)
			}
			if framing != "close" {
				in.WriteString("HTTP/1.1 204 No Content\r\n\r\n")
			}
			c := testConn(&randomReads{r: &in, rnd: rnd, max: int(maxRead) + 1})
			h, err := c.head()
			if err != nil {
				t.Fatalf("%s: head: %v", framing, err)
			}
			b := newH1Body(c, h)
			got, err := io.ReadAll(iotest.OneByteReader(b))
			if err != nil {
				t.Fatalf("%s: body: %v", framing, err)
			}
			if !bytes.Equal(got, body) {
				t.Fatalf("%s: body %q, want %q", framing, got, body)
			}
			if !b.Done() || h.close != (framing == "close") {
				t.Fatalf("%s: done %v, close %v", framing, b.Done(), h.close)
			}
			if framing != "close" {
				if h, err := c.head(); err != nil || h.code != 204 {
					t.Fatalf("%s: the next response: %d %v", framing, h.code, err)
				}
			}
		}
	}
}

func TestH1Head(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		code     int
		chunked  bool
		length   int64
		close    bool
		err      string
	}{
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 200, true, -1, false, ""},
		{"chunked wins over a length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\ntransfer-encoding: Chunked\r\n\r\n", 200, true, -1, false, ""},
		{"length", "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 11\r\n\r\n", 503, false, 11, false, ""},
		{"to the end", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n", 200, false, -1, true, ""},
		{"Connection: close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 200, false, 0, true, ""},
		{"HTTP/1.0 closes", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n", 200, false, 2, true, ""},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\n", 200, false, 2, false, ""},
		{"LF only, no reason", "HTTP/1.1 200\nContent-Length: 0\n\n", 200, false, 0, false, ""},
		{"100 Continue skipped", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 200, false, 0, false, ""},
		{"204 has no body", "HTTP/1.1 204 No Content\r\n\r\n", 204, false, 0, false, ""},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", 0, false, 0, false, `malformed response: status line "SSH-2.0-OpenSSH"`},
		{"bad code", "HTTP/1.1 2x0 OK\r\n\r\n", 0, false, 0, false, "malformed response: status line"},
		{"header without colon", "HTTP/1.1 200 OK\r\nbroken\r\n\r\n", 0, false, 0, false, `malformed response: header line "broken"`},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", 0, false, 0, false, "malformed response: Content-Length"},
		{"headers too long", "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", 70<<10) + "\r\n\r\n", 0, false, 0, false, "headers over 64 KB"},
		{"many headers too long", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X: "+strings.Repeat("a", 1000)+"\r\n", 70) + "\r\n", 0, false, 0, false, "headers over 64 KB"},
		{"cut in the headers", "HTTP/1.1 200 OK\r\nContent-Le", 0, false, 0, false, "EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				h, err := testConn(r).head()
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) {
						t.Fatalf("error %v, want one with %q", err, tc.err)
					}
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if h.code != tc.code || h.chunked != tc.chunked || h.length != tc.length || h.close != tc.close {
					t.Fatalf("got code %d chunked %v length %d close %v", h.code, h.chunked, h.length, h.close)
				}
			}
		})
	}
}

func TestH1BodyErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, head, body, err string
	}{
		{"cut in a chunk", "Transfer-Encoding: chunked", "10\r\nabc", "unexpected EOF"},
		{"cut before the last chunk", "Transfer-Encoding: chunked", "3\r\nabc\r\n", "unexpected EOF"},
		{"cut in the trailers", "Transfer-Encoding: chunked", "3\r\nabc\r\n0\r\nX: y\r\n", "unexpected EOF"},
		{"bad chunk size", "Transfer-Encoding: chunked", "zz\r\nabc\r\n", `chunk size "zz"`},
		{"no CRLF after the data", "Transfer-Encoding: chunked", "3\r\nabcdef\r\n", `"def" after a chunk's data`},
		{"size out of range", "Transfer-Encoding: chunked", "1000000000000000\r\n", "chunk size"},
		{"short of its length", "Content-Length: 10", "abc", "unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testConn(strings.NewReader("HTTP/1.1 200 OK\r\n" + tc.head + "\r\n\r\n" + tc.body))
			h, err := c.head()
			if err != nil {
				t.Fatal(err)
			}
			b := newH1Body(c, h)
			_, err = io.ReadAll(b)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one with %q", err, tc.err)
			}
			if b.Done() {
				t.Error("a broken body reads as done")
			}
		})
	}
}

// sseServer streams n completion chunks per request, counting the
// connections it accepted; check sees each request.
func sseServer(t *testing.T, n int, check func(r *http.Request, body []byte), configure ...func(*http.Server)) (*httptest.Server, *atomic.Int64) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if check != nil {
			check(r, body)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := range n {
			finish := "null"
			if i == n-1 {
				finish = `"length"`
			}
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\" t\",\"finish_reason\":%s}]}\n\n", finish)
			fl.Flush()
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	for _, f := range configure {
		f(srv.Config)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

// The request on the wire is what the server expects: the route under the
// URL's path, the query, the headers, and the protocol's JSON body.
func TestH1Request(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []string
	srv, _ := sseServer(t, 2, func(r *http.Request, body []byte) {
		var v map[string]any
		err := json.Unmarshal(body, &v)
		mu.Lock()
		defer mu.Unlock()
		got = append(got, fmt.Sprintf("%s %s host=%v ct=%s accept=%s id=%s auth=%s len=%d json=%v prompt=%v",
			r.Method, r.URL.RequestURI(), r.Host == strings.TrimPrefix(srvURL(r), "http://"), r.Header.Get("Content-Type"), r.Header.Get("Accept"),
			r.Header.Get("X-Request-Id"), r.Header.Get("Authorization"), r.ContentLength, err == nil, v["prompt"]))
	})
	b, err := New(Config{URL: srv.URL + "/prefix/?tenant=a", Endpoint: "completions", Model: "m", APIKey: "k", Conns: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, lean := b.t.(*leanTransport); !lean {
		t.Fatal("an http:// URL does not use the lean client")
	}
	defer b.Close()
	rec := record.New(7)
	b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "hello", MaxTokens: 2}, &rec)
	if !rec.OK() || len(rec.Chunks) != 2 {
		t.Fatalf("status %q %s, %d chunks", rec.Status, rec.Error, len(rec.Chunks))
	}
	// The query belongs to the base URL, the route is appended to its path.
	want := "POST /prefix/v1/completions?tenant=a host=true ct=application/json accept=text/event-stream id=tokperf-7 auth=Bearer k len="
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || !strings.HasPrefix(got[0], want) || !strings.HasSuffix(got[0], "json=true prompt=hello") {
		t.Errorf("the server saw %q, want %q… json=true prompt=hello", got, want)
	}
}

func srvURL(r *http.Request) string {
	return "http://" + r.Context().Value(http.LocalAddrContextKey).(net.Addr).String()
}

// Connections are kept alive and shared: 200 requests from 8 streams open
// at most 8 connections, and every record is whole.
func TestH1KeepAlive(t *testing.T) {
	t.Parallel()
	srv, conns := sseServer(t, 5, nil)
	b, _ := New(Config{URL: srv.URL, Endpoint: "completions", Conns: 8})
	defer b.Close()
	clock := record.NewClock()
	var wg sync.WaitGroup
	var bad atomic.Int64
	var connected atomic.Int64
	for s := range 8 {
		wg.Go(func() {
			for i := range 25 {
				rec := record.New(s*100 + i)
				b.Do(t.Context(), clock, record.Request{Prompt: "x", MaxTokens: 5}, &rec)
				if !rec.OK() || len(rec.Chunks) != 5 || rec.OutputTokens != 5 || rec.Retries != 0 {
					bad.Add(1)
					t.Logf("request %d: %s %s, %d chunks", rec.ID, rec.Status, rec.Error, len(rec.Chunks))
				}
				if rec.Connect > 0 {
					connected.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if bad.Load() > 0 || conns.Load() > 8 || connected.Load() != conns.Load() {
		t.Errorf("%d bad records, %d connections opened, %d records with a connect time: want 0, at most 8, one per connection", bad.Load(), conns.Load(), connected.Load())
	}
}

// A server that closes every connection (Connection: close, or HTTP/1.0
// without a length) is still read right, on a new connection each time.
func TestH1ServerCloses(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := accepted.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				events := "data: {\"choices\":[{\"text\":\" a\"}]}\n\ndata: {\"choices\":[{\"text\":\" b\",\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
				if n%2 == 0 {
					fmt.Fprintf(c, "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n%s", events)
				} else {
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(events), events)
				}
			}()
		}
	}()
	b, _ := New(Config{URL: "http://" + ln.Addr().String(), Endpoint: "completions", Conns: 1})
	defer b.Close()
	for i := range 6 {
		rec := record.New(i)
		b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 2}, &rec)
		if !rec.OK() || rec.OutputTokens != 2 || rec.Retries != 0 {
			t.Fatalf("request %d: %s %s, %d tokens, %d retries", i, rec.Status, rec.Error, rec.OutputTokens, rec.Retries)
		}
		// Head and events came in one write: both token chunks share the
		// read with an event after them (" b", then [DONE]); read at once,
		// that is the server's coalescing (where the kernel stamps
		// arrival), else counted as buffered.
		if rec.Buffered+rec.Coalesced != 2 {
			t.Errorf("request %d: %d buffered and %d coalesced chunks, want 2 in all", i, rec.Buffered, rec.Coalesced)
		}
	}
	if accepted.Load() != 6 {
		t.Errorf("%d connections for 6 requests to a server that closes each", accepted.Load())
	}
}

// An HTTP error keeps its message and its connection.
func TestH1HTTPError(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "overloaded, retry later", http.StatusServiceUnavailable)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	b, _ := New(Config{URL: srv.URL, Endpoint: "completions", Conns: 1})
	defer b.Close()
	for i := range 3 {
		rec := record.New(i)
		b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 2}, &rec)
		if rec.Status != record.StatusHTTPError || rec.HTTPCode != 503 || rec.Error != "HTTP 503: overloaded, retry later" {
			t.Fatalf("status %q code %d error %q", rec.Status, rec.HTTPCode, rec.Error)
		}
	}
	if conns.Load() != 1 {
		t.Errorf("%d connections for 3 errors with a body: want 1", conns.Load())
	}
}

// A cancelled request stops at once mid-stream, keeps the chunks it read,
// and its connection is not reused; a dead address fails naming the URL.
//
// Serial: real time: a cancel 200 ms into a held stream.
func TestH1CancelAndDial(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\" a\"}]}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	b, _ := New(Config{URL: srv.URL, Endpoint: "completions", Conns: 1})
	defer b.Close()
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(200*time.Millisecond, cancel)
	rec := record.New(0)
	start := time.Now()
	b.Do(ctx, record.NewClock(), record.Request{Prompt: "x", MaxTokens: 5}, &rec)
	if took := time.Since(start); rec.Status != record.StatusCancelled || len(rec.Chunks) != 1 || took > 5*time.Second {
		t.Errorf("status %q (%s), %d chunks, after %v: want cancelled with the one chunk, soon", rec.Status, rec.Error, len(rec.Chunks), took)
	}
	h1 := b.t.(*leanTransport).h1
	h1.mu.Lock()
	n := len(h1.idle)
	h1.mu.Unlock()
	if n != 0 {
		t.Errorf("%d idle connections after a cut stream", n)
	}

	dead, _ := New(Config{URL: "http://127.0.0.1:1", Endpoint: "completions", Conns: 1})
	rec = record.New(1)
	dead.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 5}, &rec)
	if rec.Status != record.StatusConnectError || !strings.Contains(rec.Error, "POST http://127.0.0.1:1/v1/completions") {
		t.Errorf("dead address: status %q error %q", rec.Status, rec.Error)
	}
}

func TestH1BadURL(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"http://", "http://[::1", "http://host:port/"} {
		if _, err := New(Config{URL: u, Endpoint: "completions"}); err == nil || !strings.Contains(err.Error(), "URL") {
			t.Errorf("%q: %v", u, err)
		}
	}
}

// response is n completion events as one chunked HTTP/1.1 response, each
// event in its own chunk, as a streaming server flushes them.
func response(n int) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	for i := range n {
		finish := "null"
		if i == n-1 {
			finish = `"length"`
		}
		ev := fmt.Sprintf(`data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":%s}],"usage":{"prompt_tokens":128,"completion_tokens":%d,"total_tokens":1}}`+"\n\n", finish, i+1)
		fmt.Fprintf(&b, "%x\r\n%s\r\n", len(ev), ev)
	}
	b.WriteString("e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n")
	return b.Bytes()
}

// The read path per event, from the connection's bytes to the SSE event:
// the lean client against net/http's response reader (which a real
// net/http client wraps in a few more layers still).
func BenchmarkResponseRead(b *testing.B) {
	in := response(1000)
	count := func(b *testing.B, body io.Reader) {
		ev := NewEvents(body)
		n := 0
		for ev.Next() {
			n++
		}
		if n != 1001 || ev.Err() != nil {
			b.Fatal(n, ev.Err())
		}
	}
	b.Run("lean", func(b *testing.B) {
		r := bytes.NewReader(in)
		c := testConn(r)
		b.ReportAllocs()
		for b.Loop() {
			r.Reset(in)
			c.r, c.w = 0, 0
			h, err := c.head()
			if err != nil {
				b.Fatal(err)
			}
			count(b, newH1Body(c, h))
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/event")
	})
	b.Run("net/http", func(b *testing.B) {
		r := bytes.NewReader(in)
		b.ReportAllocs()
		for b.Loop() {
			r.Reset(in)
			resp, err := http.ReadResponse(bufio.NewReaderSize(r, 1<<10), nil)
			if err != nil {
				b.Fatal(err)
			}
			count(b, resp.Body)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/event")
	})
}

// cannedServer answers every request on a connection with resp, over
// loopback, as fast as it can.
func cannedServer(b testing.TB, resp []byte) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// A whole request, 50 events, over loopback against a server that answers
// at once: the lean client against net/http in the same Backend (the
// server's cost is the same on both sides).
func BenchmarkDo(b *testing.B) {
	url := cannedServer(b, response(50))
	for _, lean := range []bool{true, false} {
		name := map[bool]string{true: "lean", false: "net/http"}[lean]
		b.Run(name, func(b *testing.B) {
			be, err := New(Config{URL: url, Endpoint: "completions", Conns: 1, NetHTTP: !lean})
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			clock := record.NewClock()
			chunks := make([]record.Chunk, 0, 51)
			b.ReportAllocs()
			for b.Loop() {
				rec := record.New(0)
				rec.Chunks = chunks[:0]
				be.Do(b.Context(), clock, record.Request{Prompt: "x", MaxTokens: 50}, &rec)
				if !rec.OK() || len(rec.Chunks) != 50 {
					b.Fatal(rec.Status, rec.Error, len(rec.Chunks))
				}
			}
		})
	}
}

// A server that closes keep-alives idle for 50 ms (as uvicorn does after
// 5 s): the next request finds the connection gone before it is sent, and
// dials a new one without a failure or a retry.
//
// Serial: real time: sleeps past the server's idle timeout.
func TestH1IdleClosedByServer(t *testing.T) {
	srv, conns := sseServer(t, 2, nil, func(s *http.Server) { s.IdleTimeout = 50 * time.Millisecond })
	b, _ := New(Config{URL: srv.URL, Endpoint: "completions", Conns: 1})
	defer b.Close()
	for i := range 4 {
		if i > 0 {
			time.Sleep(300 * time.Millisecond)
		}
		rec := record.New(i)
		b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 2}, &rec)
		if !rec.OK() || rec.Retries != 0 || rec.Connect == 0 {
			t.Fatalf("request %d: %s %s, %d retries, connect %v: want a clean request on a new connection", i, rec.Status, rec.Error, rec.Retries, rec.Connect)
		}
	}
	if conns.Load() != 4 {
		t.Errorf("%d connections", conns.Load())
	}
}

// A server that refuses a request before reading its body (413) and
// closes: the client's write fails, and the answer is still what the
// record shows.
//
// Serial: real time: the server closes 100 ms after its early answer.
func TestH1EarlyAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		msg := "prompt too long"
		fmt.Fprintf(c, "HTTP/1.1 413 Request Entity Too Large\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(msg), msg)
		time.Sleep(100 * time.Millisecond) // then close with the body unread: a reset
	}()
	b, _ := New(Config{URL: "http://" + ln.Addr().String(), Endpoint: "completions", Conns: 1})
	defer b.Close()
	rec := record.New(0)
	b.Do(t.Context(), record.NewClock(), record.Request{Prompt: strings.Repeat("word ", 8<<20), MaxTokens: 2}, &rec)
	if rec.Status != record.StatusHTTPError || rec.HTTPCode != 413 || rec.Error != "HTTP 413: prompt too long" || rec.Retries != 0 {
		t.Errorf("status %q code %d error %q retries %d", rec.Status, rec.HTTPCode, rec.Error, rec.Retries)
	}
}

// The real servers' captured heads and streams, framed in chunks as they
// sent them and served over loopback, give the lean client the records
// the parsers give reading the streams straight, connection reused.
func TestH1RealCaptures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		head, stream string
		chat         bool
	}{
		{"llama-chat-stream-headers.txt", "llama-chat-usage.sse", true},
		{"llama-chat-stream-headers.txt", "llama-completions.sse", false},
		{"ollama-chat-stream-headers.txt", "ollama-chat-usage.sse", true},
		{"ollama-chat-stream-headers.txt", "ollama-completions.sse", false},
	} {
		t.Run(tc.stream, func(t *testing.T) {
			head, err := readCapture(tc.head)
			if err != nil {
				t.Fatal(err)
			}
			stream, err := readCapture(tc.stream)
			if err != nil {
				t.Fatal(err)
			}
			resp := append(bytes.TrimRight(head, "\r\n"), "\r\n\r\n"...)
			resp = append(resp, chunked(stream, rand.New(rand.NewPCG(1, 2)))...)
			srv := cannedServer(t, resp)
			endpoint := "completions"
			if tc.chat {
				endpoint = "chat"
			}
			b, err := New(Config{URL: srv, Endpoint: endpoint, Conns: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			direct := record.New(0)
			readStream(&openAI{chat: tc.chat}, bytes.NewReader(stream), record.NewClock(), &direct, nil)
			// net/http reading the same response (--net-http) agrees too.
			std, err := New(Config{URL: srv, Endpoint: endpoint, Conns: 1, NetHTTP: true})
			if _, lean := std.t.(*leanTransport); err != nil || lean || std.Client() != "http/1.1 (net/http)" || b.Client() != "http/1.1 (tokperf)" {
				t.Fatalf("clients %q and %q, %v", b.Client(), std.Client(), err)
			}
			defer std.Close()
			for i := range 4 {
				rec := record.New(0)
				if i == 3 {
					std.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 6}, &rec)
					rec.Connect = 0 // its first connection
				} else {
					b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 6}, &rec)
				}
				if rec.Status != direct.Status || rec.OutputTokens != direct.OutputTokens || rec.OutputSource != direct.OutputSource ||
					rec.PromptTokens != direct.PromptTokens || len(rec.Chunks) != len(direct.Chunks) || rec.FinishReason != direct.FinishReason {
					t.Fatalf("request %d: %s %q, %d tokens from %s, %d chunks; read straight: %s, %d tokens from %s, %d chunks",
						i, rec.Status, rec.Error, rec.OutputTokens, rec.OutputSource, len(rec.Chunks), direct.Status, direct.OutputTokens, direct.OutputSource, len(direct.Chunks))
				}
				if i < 3 && (i == 0) != (rec.Connect > 0) {
					t.Errorf("request %d: connect %v: want a new connection first, then the same one", i, rec.Connect)
				}
			}
		})
	}
	// A captured non-streaming answer: its head gives the length of the
	// body that follows it.
	for _, name := range []string{"llama-chat-nonstream.txt", "ollama-chat-nonstream.txt"} {
		raw, err := readCapture(name)
		if err != nil {
			t.Fatal(err)
		}
		c := testConn(bytes.NewReader(raw))
		h, err := c.head()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		body, err := io.ReadAll(newH1Body(c, h))
		if err != nil || h.code != 200 || h.length != int64(len(body)) || !json.Valid(body) {
			t.Errorf("%s: code %d length %d, body %d bytes (valid JSON %v), %v", name, h.code, h.length, len(body), json.Valid(body), err)
		}
	}
}

// User info in the URL is Basic authorization unless an API key is given,
// and a failure's message never shows the password.
func TestH1URLCredentials(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var auth []string
	srv, _ := sseServer(t, 1, func(r *http.Request, _ []byte) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
	})
	withUser := strings.Replace(srv.URL, "http://", "http://ann:s3cret@", 1)
	for _, key := range []string{"", "k"} {
		b, err := New(Config{URL: withUser, Endpoint: "completions", APIKey: key, Conns: 1})
		if err != nil {
			t.Fatal(err)
		}
		rec := record.New(0)
		b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 1}, &rec)
		b.Close()
		if !rec.OK() {
			t.Fatalf("%s %s", rec.Status, rec.Error)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"Basic YW5uOnMzY3JldA==", "Bearer k"}; strings.Join(auth, "|") != strings.Join(want, "|") {
		t.Errorf("Authorization %q, want %q", auth, want)
	}
	dead, _ := New(Config{URL: "http://ann:s3cret@127.0.0.1:1", Endpoint: "completions", Conns: 1})
	rec := record.New(0)
	dead.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 1}, &rec)
	if strings.Contains(rec.Error, "s3cret") || !strings.Contains(rec.Error, "127.0.0.1:1") {
		t.Errorf("error %q", rec.Error)
	}
}

// A redirect is an error that says where to go, not a request followed
// with its detour inside TTFT.
func TestH1Redirect(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.RedirectHandler("https://llm.example/v1/completions", http.StatusPermanentRedirect))
	defer srv.Close()
	for _, lean := range []bool{true, false} {
		b, _ := New(Config{URL: srv.URL, Endpoint: "completions", Conns: 1, NetHTTP: !lean})
		rec := record.New(0)
		b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 1}, &rec)
		b.Close()
		if rec.Status != record.StatusHTTPError || rec.HTTPCode != 308 || !strings.Contains(rec.Error, "redirects to https://llm.example/v1/completions") {
			t.Errorf("lean %v: status %q code %d error %q", lean, rec.Status, rec.HTTPCode, rec.Error)
		}
	}
}

// hugeEvent is a response whose one event is 10 MB, sent in 16 KB chunks
// as a server flushing a long final text would.
func hugeEvent(ndjson bool) []byte {
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	ev := []byte(`data: {"choices":[{"text":"` + strings.Repeat("x", 10<<20) + `","finish_reason":"length"}],"usage":{"completion_tokens":1}}` + "\n\n")
	if ndjson {
		b.Reset()
		b.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n")
		ev = []byte(`{"response":"` + strings.Repeat("x", 10<<20) + `","done":true,"eval_count":1}` + "\n")
	}
	for len(ev) > 0 {
		n := min(len(ev), 16<<10)
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, ev[:n])
		ev = ev[n:]
	}
	if !ndjson {
		b.WriteString("e\r\ndata: [DONE]\n\n\r\n")
	}
	b.WriteString("0\r\n\r\n")
	return b.Bytes()
}

// One 10 MB event: reading it costs time linear in its size on both
// clients (it once cost the lean client 15 times net/http's).
func BenchmarkHugeEvent(b *testing.B) {
	sse, ndjson := cannedServer(b, hugeEvent(false)), cannedServer(b, hugeEvent(true))
	for _, tc := range []struct {
		name, url, endpoint, engine string
		lean                        bool
	}{
		{"sse/lean", sse, "completions", "", true},
		{"sse/net-http", sse, "completions", "", false},
		{"ndjson/lean", ndjson, "generate", "ollama", true},
		{"ndjson/net-http", ndjson, "generate", "ollama", false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			be, err := New(Config{URL: tc.url, Endpoint: tc.endpoint, Engine: tc.engine, Conns: 1, NetHTTP: !tc.lean})
			if err != nil {
				b.Fatal(err)
			}
			defer be.Close()
			clock := record.NewClock()
			b.SetBytes(10 << 20)
			for b.Loop() {
				rec := record.New(1)
				be.Do(b.Context(), clock, record.Request{Prompt: "x", MaxTokens: 1}, &rec)
				if !rec.OK() {
					b.Fatalf("%s: %s", rec.Status, rec.Error)
				}
			}
		})
	}
}

// A server that closes every kept-alive connection after a response
// without saying so (llama-server) is learned from its first closes:
// then every request dials a new connection (no retries, the record says
// why), and the time lost finding a kept connection closed is connect
// time, never the client's wait.
//
// Serial: real time: a client wait under half the server's 30 ms lag.
func TestH1LearnsUnkeptConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	const lag = 30 * time.Millisecond
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				events := "data: {\"choices\":[{\"text\":\" a\",\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n", len(events), events)
				// The next request on this connection is read, then the
				// connection is closed a while later, unanswered.
				if _, err := http.ReadRequest(br); err == nil {
					time.Sleep(lag)
				}
			}()
		}
	}()
	b, _ := New(Config{URL: "http://" + ln.Addr().String(), Endpoint: "completions", Conns: 1})
	defer b.Close()
	clock := record.NewClock()
	retries := 0
	for i := range 8 {
		rec := record.New(i)
		rec.Scheduled = clock.Now()
		b.Do(t.Context(), clock, record.Request{Prompt: "x", MaxTokens: 1}, &rec)
		if !rec.OK() {
			t.Fatalf("request %d: %s %s", i, rec.Status, rec.Error)
		}
		retries += rec.Retries
		if wait := rec.ClientQueue() - rec.Connect; wait > lag/2 {
			t.Errorf("request %d: client wait %v (queue %v, connect %v, %d retries): the reconnect was counted as the client's", i, wait, rec.ClientQueue(), rec.Connect, rec.Retries)
		}
		if i >= 3 && (!rec.NoKeepAlive || rec.Retries != 0) {
			t.Errorf("request %d: no_keep_alive %v, %d retries; want the habit learned by now", i, rec.NoKeepAlive, rec.Retries)
		}
	}
	// One connection a request: the retried ones failed on a kept one.
	if retries != unkeptAfter || accepted.Load() != 8 {
		t.Errorf("%d retries, %d connections for 8 requests; want %d retries before the habit is learned, 8 connections", retries, accepted.Load(), unkeptAfter)
	}
}
