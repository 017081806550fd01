package backend

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// h1Client is the lean HTTP/1.1 client of the streaming requests to an
// http:// server. A streamed token costs a benchmark client most of its
// CPU in the read path, and net/http's has many layers (a body with its
// lock, an EOF signal, the chunked reader, a bufio.Reader, the persistent
// connection) and two goroutines per connection that each request passes
// through. Here the goroutine that sends a request reads its response:
// one buffer per connection holds the status line, the headers and the
// chunk headers, and the body's bytes go from it straight to the caller.
//
// It speaks what a generation request needs: one POST with a
// Content-Length body; a response whose body is chunked, has a length, or
// runs to the connection's end; keep-alive, with a pool of idle
// connections; informational (1xx) responses skipped. TLS and HTTP/2 stay
// with net/http.
type h1Client struct {
	addr    string // host:port to dial
	host    string // the Host header
	target  string // the request target: path and query
	basic   string // Basic credentials from the URL's user info, if any
	headers []byte // the user's headers, each "\r\nName: value"
	dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	maxIdle int

	mu   sync.Mutex
	idle []*h1Conn // most recently used last

	// The server's keep-alive habit. A server that closes every connection
	// after a response without saying so (llama-server: no Connection:
	// close) is found out when a request sent on a kept connection fails
	// before any byte. After unkeptAfter such closes, and no kept
	// connection that served a request, it is learned: from then on every
	// request dials a new connection and no connection is kept.
	closedKept, reused atomic.Int64
	unkept             atomic.Bool

	// retrans sums the TCP segments this client's connections sent again,
	// read from TCP_INFO as each request ends; tcpInfo says one was read.
	retrans atomic.Int64
	tcpInfo atomic.Bool
}

// noteRetrans adds what c resent since its last request ended.
func (h *h1Client) noteRetrans(c *h1Conn) {
	n, ok := retransOf(c.nc)
	if !ok {
		return
	}
	h.tcpInfo.Store(true)
	if d := int64(n) - int64(c.retrans); d > 0 {
		h.retrans.Add(d)
	}
	c.retrans = n
}

// unkeptAfter is how many kept-alive connections found closed, with none
// that worked, make the client stop keeping them.
const unkeptAfter = 2

// closedOnReuse notes a kept connection the server had closed.
func (h *h1Client) closedOnReuse() {
	if h.closedKept.Add(1) >= unkeptAfter && h.reused.Load() == 0 {
		h.unkept.Store(true)
		h.closeIdle()
	}
}

// Limits of what a response may hold before it is refused.
const (
	h1MaxHead    = 64 << 10 // status line and headers together
	h1BufSize    = 2 << 10  // a connection's buffer: chunk headers and SSE events are short
	h1IdleExpiry = 90 * time.Second
)

// newH1Client makes a client for the generation URL u (http://).
func newH1Client(u *url.URL, conns int, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *h1Client {
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	target := u.EscapedPath()
	if target == "" {
		target = "/"
	}
	if u.RawQuery != "" {
		target += "?" + u.RawQuery
	}
	if dial == nil {
		dial = Dial
	}
	h := &h1Client{addr: addr, host: u.Host, target: target, dial: dial, maxIdle: max(conns, 1) + 16}
	if u.User != nil {
		// As net/http does: user info in the URL is Basic authorization.
		pass, _ := u.User.Password()
		h.basic = "Basic " + base64.StdEncoding.EncodeToString([]byte(u.User.Username()+":"+pass))
	}
	return h
}

// h1Conn is one connection and its read buffer; buf[r:w] is read and not
// yet consumed.
type h1Conn struct {
	nc     net.Conn
	stamp  *stampConn // nil without kernel timestamps
	buf    []byte
	r, w   int
	reads  int       // reads from the connection
	in     int64     // bytes read from it
	readAt time.Time // the latest read that returned bytes (without stamp)
	// When that read began and the one before it ended (without stamp).
	readBegan, readBefore time.Time
	idleAt                time.Time
	retrans               uint32 // TCP_INFO's total_retrans when last read
}

// arrivedAt is when the bytes read last reached this machine: the
// kernel's time where the connection has one, else when they were read.
func (c *h1Conn) arrivedAt() (time.Time, bool) {
	if c.stamp != nil {
		return c.stamp.arrivedAt()
	}
	return c.readAt, !c.readAt.IsZero()
}

// readWindow is the kernel-stamped connection's, else that of the
// connection's own reads (stamped false: arrivedAt is then when the read
// returned).
func (c *h1Conn) readWindow() (start, prevEnd time.Time, stamped bool) {
	if c.stamp != nil {
		return c.stamp.readWindow()
	}
	return c.readBegan, c.readBefore, false
}

// get takes an idle connection, or dials one (fresh: never an idle one).
// dialed is how long a new connection took; 0 for a reused one.
func (h *h1Client) get(ctx context.Context, fresh bool) (c *h1Conn, dialed time.Duration, err error) {
	if !fresh {
		now := time.Now()
		h.mu.Lock()
		for len(h.idle) > 0 {
			c = h.idle[len(h.idle)-1]
			h.idle[len(h.idle)-1] = nil
			h.idle = h.idle[:len(h.idle)-1]
			if now.Sub(c.idleAt) < h1IdleExpiry {
				break
			}
			c.nc.Close()
			c = nil
		}
		h.mu.Unlock()
		// Servers close keep-alives idle for a few seconds (uvicorn after
		// 5 s): such a connection is dropped here, not found dead after
		// the request was written.
		if c != nil && now.Sub(c.idleAt) > 100*time.Millisecond && closedByPeer(c.nc) {
			c.nc.Close()
			c = nil
		}
		if c != nil {
			return c, 0, nil
		}
	}
	start := time.Now()
	nc, err := h.dial(ctx, "tcp", h.addr)
	if err != nil {
		return nil, 0, err
	}
	nc = withStamps(nc)
	c = &h1Conn{nc: nc, buf: make([]byte, h1BufSize)}
	c.stamp, _ = nc.(*stampConn)
	return c, max(time.Since(start), 1), nil
}

// put returns a connection whose response was read to its end; one
// holding bytes past it is closed instead.
func (h *h1Client) put(c *h1Conn) {
	c.idleAt = time.Now()
	h.mu.Lock()
	if len(h.idle) < h.maxIdle && c.r == c.w && !h.unkept.Load() {
		h.idle = append(h.idle, c)
		c = nil
	}
	h.mu.Unlock()
	if c != nil {
		c.nc.Close()
	}
}

// closeIdle closes the idle connections.
func (h *h1Client) closeIdle() {
	h.mu.Lock()
	idle := h.idle
	h.idle = nil
	h.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}

// request is a POST of body with the streaming request's headers, in one
// buffer for one write. An API key is a Bearer token and wins over the
// URL's user info.
func (h *h1Client) request(body []byte, id int, apiKey string) []byte {
	b := make([]byte, 0, 256+len(h.target)+len(h.host)+len(apiKey)+len(h.basic)+len(h.headers)+len(body))
	b = append(b, "POST "...)
	b = append(b, h.target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, h.host...)
	b = append(b, "\r\nUser-Agent: tokperf\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nX-Request-Id: tokperf-"...)
	b = strconv.AppendInt(b, int64(id), 10)
	switch {
	case apiKey != "":
		b = append(b, "\r\nAuthorization: Bearer "...)
		b = append(b, apiKey...)
	case h.basic != "":
		b = append(b, "\r\nAuthorization: "...)
		b = append(b, h.basic...)
	}
	b = append(b, h.headers...)
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...)
}

// fill reads more from the connection into the buffer, growing it up to
// limit when it is full.
func (c *h1Conn) fill(limit int) error {
	if c.r == c.w {
		c.r, c.w = 0, 0
	} else if c.r > 0 && c.w == len(c.buf) {
		c.w = copy(c.buf, c.buf[c.r:c.w])
		c.r = 0
	}
	if c.w == len(c.buf) {
		if len(c.buf) >= limit {
			return errLineTooLong
		}
		grown := make([]byte, min(2*len(c.buf), limit))
		copy(grown, c.buf[:c.w])
		c.buf = grown
	}
	began := time.Now()
	n, err := c.nc.Read(c.buf[c.w:])
	c.reads++
	c.in += int64(n)
	c.w += n
	if n > 0 {
		if c.stamp == nil {
			c.readBefore, c.readBegan, c.readAt = c.readAt, began, time.Now()
		}
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

var errLineTooLong = errors.New("line too long")

// line is the next line without its LF or CRLF, valid until the next read.
func (c *h1Conn) line(limit int) ([]byte, error) {
	for {
		if i := bytes.IndexByte(c.buf[c.r:c.w], '\n'); i >= 0 {
			l := c.buf[c.r : c.r+i]
			c.r += i + 1
			if len(l) > 0 && l[len(l)-1] == '\r' {
				l = l[:len(l)-1]
			}
			return l, nil
		}
		if err := c.fill(limit); err != nil {
			return nil, err
		}
	}
}

// h1Head is what a response's head says about it.
type h1Head struct {
	code     int
	status   string // the status line, for errors
	chunked  bool
	length   int64  // -1: unknown (chunked, or to the connection's end)
	close    bool   // the connection ends with this response
	location string // a redirect's target
	ctype    string // Content-Type
	encoding string // Content-Encoding
	// retryAfter is the Retry-After header (seconds or an HTTP-date).
	retryAfter string
}

// head reads a response's status line and headers, skipping 1xx
// responses.
func (c *h1Conn) head() (h h1Head, err error) {
	for {
		h, err = c.head1()
		if err != nil || h.code >= 200 || h.code == 101 {
			return h, err
		}
	}
}

func (c *h1Conn) head1() (h1Head, error) {
	h := h1Head{length: -1}
	size := 0
	line, err := c.line(h1MaxHead)
	if err != nil {
		if err == errLineTooLong {
			err = fmt.Errorf("malformed response: a status line over %d KB", h1MaxHead>>10)
		}
		return h, err
	}
	size += len(line)
	// HTTP/1.x NNN reason
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || line[8] != ' ' || (len(line) > 12 && line[12] != ' ') {
		return h, fmt.Errorf("malformed response: status line %.80q", line)
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil || code < 100 {
		return h, fmt.Errorf("malformed response: status line %.80q", line)
	}
	h.code, h.status = code, string(line)
	http10 := line[7] == '0'
	h.close = http10 // HTTP/1.0 closes unless it says keep-alive
	for {
		line, err := c.line(h1MaxHead)
		if err != nil {
			if err == errLineTooLong {
				err = fmt.Errorf("malformed response: headers over %d KB", h1MaxHead>>10)
			}
			return h, err
		}
		if size += len(line); size > h1MaxHead {
			return h, fmt.Errorf("malformed response: headers over %d KB", h1MaxHead>>10)
		}
		if len(line) == 0 {
			break
		}
		i := bytes.IndexByte(line, ':')
		if i <= 0 {
			return h, fmt.Errorf("malformed response: header line %.80q", line)
		}
		name, value := line[:i], bytes.TrimSpace(line[i+1:])
		switch {
		case asciiEqualFold(name, "transfer-encoding"):
			if containsFold(value, "chunked") {
				h.chunked = true
			}
		case asciiEqualFold(name, "content-length"):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
				return h, fmt.Errorf("malformed response: Content-Length %.40q", value)
			}
			h.length = n
		case asciiEqualFold(name, "location"):
			h.location = string(value)
		case asciiEqualFold(name, "content-type"):
			h.ctype = string(value)
		case asciiEqualFold(name, "content-encoding"):
			h.encoding = string(value)
		case asciiEqualFold(name, "retry-after"):
			h.retryAfter = string(value)
		case asciiEqualFold(name, "connection"):
			if containsFold(value, "close") {
				h.close = true
			} else if containsFold(value, "keep-alive") && http10 {
				h.close = false
			}
		}
	}
	switch {
	case h.chunked:
		h.length = -1 // chunked framing wins over a length (RFC 9112 §6.3)
	case h.code == 204 || h.code == 304 || h.code < 200:
		h.length = 0
	case h.length < 0:
		h.close = true // the body runs to the connection's end
	}
	return h, nil
}

func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// containsFold reports whether b holds lower, ASCII case ignored.
func containsFold(b []byte, lower string) bool {
	for i := 0; i+len(lower) <= len(b); i++ {
		if asciiEqualFold(b[i:i+len(lower)], lower) {
			return true
		}
	}
	return false
}

// h1Body reads a response's body from its connection: chunked, of a known
// length, or to the connection's end.
type h1Body struct {
	c       *h1Conn
	chunked bool
	left    int64 // bytes left in the chunk or body; -1: to the connection's end
	inChunk bool  // a chunk's data was read: its CRLF follows
	err     error // sticky: io.EOF at the clean end
	reads0  int   // the connection's reads before the body
}

func newH1Body(c *h1Conn, h h1Head) *h1Body {
	b := &h1Body{c: c, chunked: h.chunked, left: h.length, reads0: c.reads}
	if h.chunked {
		b.left = 0
	} else if h.length == 0 {
		b.err = io.EOF
	}
	return b
}

// Reads is the number of reads from the connection since the body began
// (the SSE scanner tells from it whether an event was already waiting; a
// first event that came with the headers was not).
func (b *h1Body) Reads() int { return b.c.reads - b.reads0 }

// Done reports whether the body was read to its clean end.
func (b *h1Body) Done() bool { return b.err == io.EOF }

func (b *h1Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	c := b.c
	for b.chunked && b.left == 0 {
		if err := b.nextChunk(); err != nil {
			b.err = err
			return 0, err
		}
	}
	if c.r == c.w {
		if err := c.fill(len(c.buf)); err != nil {
			if err == io.EOF {
				if b.left < 0 {
					b.err = io.EOF // the end of a body that runs to the connection's end
					return 0, io.EOF
				}
				err = io.ErrUnexpectedEOF
			}
			b.err = err
			return 0, err
		}
	}
	avail := c.buf[c.r:c.w]
	if b.left >= 0 && int64(len(avail)) > b.left {
		avail = avail[:b.left]
	}
	n := copy(p, avail)
	c.r += n
	if b.left > 0 {
		b.left -= int64(n)
		if b.left == 0 && !b.chunked {
			b.err = io.EOF
		}
	}
	return n, nil
}

// nextChunk reads the CRLF after a chunk's data and the next chunk's
// header; at the last chunk it reads the trailers and ends the body.
func (b *h1Body) nextChunk() error {
	line, err := b.line()
	if err != nil {
		return err
	}
	if b.inChunk {
		if len(line) != 0 {
			return fmt.Errorf("malformed chunked body: %.40q after a chunk's data, want CRLF", line)
		}
		b.inChunk = false
		if line, err = b.line(); err != nil {
			return err
		}
	}
	size, ok := chunkSize(line)
	if !ok {
		return fmt.Errorf("malformed chunked body: chunk size %.40q", line)
	}
	if size == 0 {
		for { // trailers, up to the blank line
			line, err := b.line()
			if err != nil {
				return err
			}
			if len(line) == 0 {
				return io.EOF
			}
		}
	}
	b.left, b.inChunk = size, true
	return nil
}

func (b *h1Body) line() ([]byte, error) {
	line, err := b.c.line(h1MaxHead)
	switch err {
	case nil:
		return line, nil
	case io.EOF:
		return nil, io.ErrUnexpectedEOF
	case errLineTooLong:
		return nil, fmt.Errorf("malformed chunked body: a line over %d KB", h1MaxHead>>10)
	}
	return nil, err
}

// chunkSize parses a chunk header: hex digits, then optional whitespace
// and extensions after ';'.
func chunkSize(line []byte) (int64, bool) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimRight(line, " \t")
	if len(line) == 0 || len(line) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range line {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | int64(c)
	}
	return n, true
}
