package backend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// The two transports a Backend sends through: net/http, and tokperf's
// own lean HTTP/1.1 client.

// netTransport sends requests through net/http.
type netTransport struct {
	client  *http.Client
	url     string
	apiKey  string
	headers []Header
	h2c, h2 bool
}

func (t *netTransport) name() string {
	switch {
	case t.h2c:
		return "h2c (net/http)"
	case t.h2:
		return "h2 or http/1.1 by TLS ALPN (net/http)"
	}
	return "http/1.1 (net/http)"
}

func (t *netTransport) closeIdle() { t.client.CloseIdleConnections() }

func (t *netTransport) send(ctx context.Context, clock record.Clock, body []byte, rec *record.Record, arrive *arrivals) (*reply, error) {
	// Cancelling rctx cuts the response off: it bounds the drain after
	// the final event.
	rctx, cancel := context.WithCancel(ctx)
	for attempt := 0; ; attempt++ {
		hr, err := http.NewRequestWithContext(rctx, http.MethodPost, t.url, bytes.NewReader(body))
		if err != nil {
			cancel()
			return nil, err
		}
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("Accept", "text/event-stream")
		hr.Header.Set("X-Request-Id", "tokperf-"+strconv.Itoa(rec.ID))
		if t.apiKey != "" {
			hr.Header.Set("Authorization", "Bearer "+t.apiKey)
		}
		for _, h := range t.headers {
			hr.Header.Add(h.Name, h.Value)
		}
		rec.Sent = clock.Now()
		arrive.conn = nil
		// A dial runs on a goroutine of its own and may finish after this
		// request took another connection, so its times are atomics and
		// only a new connection's are kept, when it is in hand.
		var dialStart, dialTime atomic.Int64
		hr = hr.WithContext(httptrace.WithClientTrace(hr.Context(), &httptrace.ClientTrace{
			ConnectStart: func(string, string) { dialStart.Store(int64(clock.Now())) },
			ConnectDone: func(string, string, error) {
				if t := dialStart.Load(); t > 0 {
					dialTime.Store(int64(clock.Now()) - t)
				}
			},
			GotConn: func(info httptrace.GotConnInfo) {
				rec.Sent = clock.Now()
				if !info.Reused {
					rec.Connect = time.Duration(dialTime.Load())
				}
				if sc, ok := info.Conn.(*stampConn); ok {
					arrive.conn = sc
				}
			},
		}))
		resp, err := t.client.Do(hr)
		if err == nil {
			return &reply{code: resp.StatusCode, location: resp.Header.Get("Location"), ctype: resp.Header.Get("Content-Type"), encoding: resp.Header.Get("Content-Encoding"), retryAfter: resp.Header.Get("Retry-After"), body: resp.Body, finish: func(reuse bool) {
				if reuse {
					t := time.AfterFunc(drainTime, cancel)
					io.Copy(io.Discard, io.LimitReader(resp.Body, drainBytes))
					t.Stop()
				}
				resp.Body.Close()
				cancel()
			}}, nil
		}
		// A connection that failed before any response byte is safe to
		// retry once on a new one (servers close idle keep-alives); the
		// retry is counted, never hidden.
		if attempt == 0 && ctx.Err() == nil && retryable(err) {
			rec.Retries++
			continue
		}
		cancel()
		return nil, redactErr(err)
	}
}

// What is read of a response after its final event, so that a
// connection can go back to the pool (the chunked terminator): a server
// that sends more, or holds the response open, has its connection closed
// instead of holding the request's slot.
const (
	drainBytes = 4 << 10
	drainTime  = 50 * time.Millisecond
)

// leanTransport sends requests through tokperf's own HTTP/1.1 client.
type leanTransport struct {
	h1     *h1Client
	shown  string
	apiKey string
}

func (t *leanTransport) name() string { return "http/1.1 (tokperf)" }

func (t *leanTransport) closeIdle() { t.h1.closeIdle() }

func (t *leanTransport) send(ctx context.Context, clock record.Clock, body []byte, rec *record.Record, arrive *arrivals) (*reply, error) {
	wire := t.h1.request(body, rec.ID, t.apiKey)
	// A server learned to close every connection after a response gets a
	// new connection for every request, said in the record.
	rec.NoKeepAlive = t.h1.unkept.Load()
	var failed time.Duration // when the attempt on a closed kept connection began
	for attempt := 0; ; attempt++ {
		rec.Sent = clock.Now()
		c, dialed, err := t.h1.get(ctx, attempt > 0 || rec.NoKeepAlive)
		if err != nil {
			return nil, fmt.Errorf("POST %s: %w", t.shown, err)
		}
		rec.Sent = clock.Now()
		if dialed > 0 {
			rec.Connect = dialed
			if attempt > 0 {
				// Finding the kept connection closed is part of getting a
				// connection: in connect time, not the client's wait.
				rec.Connect = rec.Sent - failed
			}
		}
		arrive.conn = c
		// A cancelled request is cut off by a deadline in the past: every
		// read or write on the connection returns at once.
		stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
		in := c.in
		_, werr := c.nc.Write(wire)
		// The head is read even after a failed write: a server may answer
		// early (413) and close before taking the whole request.
		h, err := c.head()
		if err != nil && werr != nil {
			err = werr
		}
		if err != nil {
			stop()
			t.h1.noteRetrans(c)
			c.nc.Close()
			// A kept-alive connection the server closed fails before any
			// response byte: safe to retry once on a new one (servers close
			// idle keep-alives); the retry is counted, never hidden.
			if attempt == 0 && dialed == 0 && c.in == in && ctx.Err() == nil {
				rec.Retries++
				failed = rec.Sent
				t.h1.closedOnReuse()
				continue
			}
			return nil, fmt.Errorf("POST %s: %w", t.shown, err)
		}
		if dialed == 0 {
			t.h1.reused.Add(1) // a kept connection served a response
		}
		rb := newH1Body(c, h)
		return &reply{code: h.code, location: h.location, ctype: h.ctype, encoding: h.encoding, retryAfter: h.retryAfter, body: rb, finish: func(reuse bool) {
			if reuse {
				c.nc.SetReadDeadline(time.Now().Add(drainTime))
				io.Copy(io.Discard, io.LimitReader(rb, drainBytes))
			}
			t.h1.noteRetrans(c)
			if stop() && reuse && rb.Done() && !h.close {
				c.nc.SetReadDeadline(time.Time{})
				t.h1.put(c)
			} else {
				c.nc.Close()
			}
		}}, nil
	}
}

func retryable(err error) bool {
	s := err.Error()
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(s, "server closed idle connection") || strings.Contains(s, "connection reset")
}
