package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/memnet"
)

// close_after_stream ends the connection after each streamed response, as
// llama-server does; without it the connection stays open for the next.
func TestCloseAfterStream(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ closes, silent bool }{{false, false}, {true, false}, {true, true}} {
		closes := tc.closes
		t.Run(fmt.Sprintf("close_after_stream=%v,silent_close=%v", closes, tc.silent), func(t *testing.T) {
			p := withEngine(t, "llamacpp")
			p.Wire.CloseAfterStream, p.Wire.SilentClose = closes, tc.silent
			serveVirtualNet(t, p, Options{}, nil, func(n *memnet.Net, _ *Server) {
				head, chunks, open := rawExchange(t, n, "/completion", `{"prompt":"a b","n_predict":3,"stream":true}`)
				if len(chunks) == 0 {
					t.Fatalf("no body after %s", head)
				}
				if got, want := strings.Contains(head, "Connection: close"), closes && !tc.silent; got != want {
					t.Errorf("Connection: close sent %v, want %v:\n%s", got, want, head)
				}
				if open == closes {
					t.Errorf("connection open after the stream: %v, want %v", open, !closes)
				}
			})
		})
	}
}

// metrics_at_end moves the token counters only when a request ends, with
// all its tokens; otherwise they move every step.
func TestMetricsAtEnd(t *testing.T) {
	t.Parallel()
	for _, atEnd := range []bool{false, true} {
		t.Run(fmt.Sprint("metrics_at_end=", atEnd), func(t *testing.T) {
			p := mustProfile(t, "tiny")
			p.Wire.MetricsAtEnd = atEnd
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				e := NewEngine(p)
				go e.Run(ctx)
				done, _ := e.Submit(Job{PromptTokens: 10, MaxTokens: 100, Length: 100})
				cut, _ := e.Submit(Job{PromptTokens: 20, MaxTokens: 1000, Length: 1000})
				time.Sleep(50 * time.Millisecond)
				synctest.Wait()
				mid := e.GenTotal.Load()
				if atEnd && (mid != 0 || e.PromptTotal.Load() != 0) {
					t.Errorf("mid-way: %d generated, %d prompt tokens counted, want none yet", mid, e.PromptTotal.Load())
				}
				if !atEnd && mid < 90 {
					t.Errorf("mid-way: %d generated tokens counted, want about 100", mid)
				}
				drain(done)
				e.Cancel(cut)
				synctest.Wait()
				if atEnd && e.GenTotal.Load() <= 100 {
					t.Errorf("after both left: %d generated, want the finished 100 and the cancelled one's", e.GenTotal.Load())
				}
				if got := e.PromptTotal.Load(); got != 30 {
					t.Errorf("%d prompt tokens counted, want 30", got)
				}
			})
		})
	}
}
