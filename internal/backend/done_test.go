package backend

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// heldServer answers every request with head and then body's writes, in
// turn, and holds the connection open until the test ends (at most 20 s):
// what a server that is slow to end its response looks like.
func heldServer(t *testing.T, head string, body ...string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, head)
				for _, b := range body {
					if _, err := io.WriteString(c, b); err != nil {
						return
					}
				}
				select {
				case <-done:
				case <-time.After(20 * time.Second):
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// endless writes what every after the body, every 5 ms, until the
// client hangs up or the test ends.
func endlessServer(t *testing.T, head, body, every string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { close(done); ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, head+body)
				tick := time.NewTicker(5 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-done:
						return
					case <-tick.C:
						if _, err := io.WriteString(c, every); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func chunk(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }

const chunkedHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

var twoEvents = chunk("data: {\"choices\":[{\"text\":\" a\"}]}\n\n") +
	chunk("data: {\"choices\":[{\"text\":\" b\",\"finish_reason\":\"length\"}]}\n\n") + chunk("data: [DONE]\n\n")

// TestDoneEndsRequest: after [DONE] (or an engine's final event) the
// request is done, on both clients: a server that then holds the response
// open, keeps sending comments, or sends trailers without end, neither
// delays the request nor moves its Done, and the next request works.
//
// Serial: real time: the final event must end a request before the drain.
func TestDoneEndsRequest(t *testing.T) {
	for _, tc := range []struct {
		name, endpoint, engine, url string
		tokens                      int
	}{
		{"held open after [DONE]", "completions", "", heldServer(t, chunkedHead, twoEvents), 2},
		{"comments after [DONE]", "completions", "", endlessServer(t, chunkedHead, twoEvents, chunk(": keep-alive\n\n")), 2},
		{"endless trailers", "completions", "", endlessServer(t, chunkedHead, twoEvents+"0\r\n", "X-Trailer: 1\r\n"), 2},
		{"held open, no length", "completions", "", heldServer(t, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n",
			"data: {\"choices\":[{\"text\":\" a\",\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"), 1},
		{"SGLang final event", "generate", "sglang", heldServer(t, chunkedHead,
			chunk(`data: {"text":"a","meta_info":{"prompt_tokens":3,"completion_tokens":1,"finish_reason":null}}`+"\n\n"),
			chunk(`data: {"text":"ab","meta_info":{"prompt_tokens":3,"completion_tokens":2,"finish_reason":{"type":"length"}}}`+"\n\n")), 2},
		{"TGI final event", "generate", "tgi", heldServer(t, chunkedHead,
			chunk(`data:{"token":{"text":"a"}}`+"\n\n"),
			chunk(`data:{"token":{"text":"b"},"details":{"finish_reason":"length","generated_tokens":2}}`+"\n\n")), 2},
		{"llama.cpp final event", "generate", "llamacpp", heldServer(t, chunkedHead,
			chunk(`data: {"content":"a","tokens":[1]}`+"\n\n"),
			chunk(`data: {"content":"b","tokens":[2],"stop":true,"stop_type":"limit","tokens_predicted":2}`+"\n\n")), 2},
		{"Ollama final line", "generate", "ollama", heldServer(t, "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n",
			chunk(`{"response":"a","done":false}`+"\n"),
			chunk(`{"response":"b","done":true,"done_reason":"length","eval_count":2}`+"\n")), 2},
	} {
		for _, netHTTP := range []bool{false, true} {
			name := tc.name + map[bool]string{false: "/lean", true: "/net-http"}[netHTTP]
			t.Run(name, func(t *testing.T) {
				b, err := New(Config{URL: tc.url, Endpoint: tc.endpoint, Engine: tc.engine, Conns: 1, NetHTTP: netHTTP})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				clock := record.NewClock()
				for i := range 2 { // the second on a fresh connection: the first was cut
					rec := record.New(i)
					b.Do(t.Context(), clock, record.Request{Prompt: "x", MaxTokens: 2}, &rec)
					back := clock.Now()
					if !rec.OK() || rec.OutputTokens != tc.tokens {
						t.Fatalf("request %d: status %q (%s), %d tokens", i, rec.Status, rec.Error, rec.OutputTokens)
					}
					// 50 ms of drain at most; seconds of margin for a loaded machine.
					if took := back - rec.Sent; took > 3*time.Second {
						t.Errorf("request %d took %v after its final event: the server held it", i, took)
					}
					// net/http reads a last chunk's trailers before it returns
					// the chunk's data (its buffer bounds them), so there the
					// final event is late itself.
					late := netHTTP && tc.name == "endless trailers"
					if rec.Done < rec.LastToken || (!late && rec.Done > back-drainTime/2) {
						t.Errorf("request %d: done at %v, last token %v, back at %v: want done at the final event, before the drain", i, rec.Done, rec.LastToken, back)
					}
				}
			})
		}
	}
}
