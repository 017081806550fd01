package sim

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/memnet"
)

// A body longer than any prompt of the context is refused at its cap, with
// 413 and why, before it is held whole or decoded (a 64 MiB body cost
// ~316 MB per concurrent request).
func TestOversizedBodyRefused(t *testing.T) {
	t.Parallel()
	p, _ := LoadProfile("tiny")
	serveVirtualNet(t, p, Options{}, nil, func(n *memnet.Net, s *Server) {
		c := &http.Client{Transport: &http.Transport{DialContext: n.Dial}}
		defer c.CloseIdleConnections()
		prompt := strings.Repeat("a ", int(s.maxBody()))
		code, _, body := do(t, c, "POST", "/v1/completions", `{"prompt":"`+prompt+`","max_tokens":4}`)
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), fmt.Sprintf("over %d bytes", s.maxBody())) {
			t.Errorf("HTTP %d %.200s, want 413 naming the cap", code, body)
		}
		if s.maxBody() >= 64<<20 {
			t.Errorf("cap %d for a %d-token context: want it well under 64 MiB", s.maxBody(), p.ContextLength)
		}
		time.Sleep(time.Second) // the server's wait before it resets a refused connection
	})
}

// A client that sends its body slowly, or stops, holds its connection for
// bodyTimeout, not for ever (slow clients exhausted the descriptors); a
// stream after a body read in time is not cut by that deadline.
func TestSlowBodyTimesOut(t *testing.T) {
	t.Parallel()
	p, _ := LoadProfile("tiny")
	p.Decode.Linear.AMs = 100 // 400 tokens take 40 s, past bodyTimeout
	serveVirtualNet(t, p, Options{}, nil, func(n *memnet.Net, s *Server) {
		conn, err := n.Dial(context.Background(), "tcp", "sim:80")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		fmt.Fprint(conn, "POST /v1/completions HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"prompt\":")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to a stalled body: %v", err)
		}
		resp.Body.Close()
		if took := time.Since(start); resp.StatusCode != 400 || took > bodyTimeout+time.Second {
			t.Errorf("HTTP %d after %v, want 400 after %v", resp.StatusCode, took, bodyTimeout)
		}
		c := &http.Client{Transport: &http.Transport{DialContext: n.Dial}}
		defer c.CloseIdleConnections()
		code, _, body := do(t, c, "POST", "/v1/completions", `{"prompt":"hi","max_tokens":400,"stream":true,"ignore_eos":true}`)
		if code != 200 || !strings.Contains(string(body), "[DONE]") {
			t.Errorf("a stream longer than the body deadline: HTTP %d, %d bytes, want it whole", code, len(body))
		}
	})
}
