package backend

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// A server that holds every response open after it is complete (its
// handler runs on, here for 20 s) holds the HEAD that reads an https
// target's TLS too: its connection must not carry the first request of
// the run, which would wait for that handler (a TTFT of 15 s seen with
// --net-http, the HEAD's connection reused). A plain http:// target has
// no TLS to read and sends no HEAD.
func TestNegotiatedHeadHeldOpen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		tls  bool
	}{{"http", false}, {"https", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					w.Header().Set("Content-Type", "text/event-stream")
					w.Write([]byte("data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"))
				}
				w.(http.Flusher).Flush()
				select { // held open, the response complete
				case <-release:
				case <-time.After(20 * time.Second):
				}
			}))
			cfg := Config{URL: "", Endpoint: "completions", Model: "m", Conns: 1, NetHTTP: true}
			if tc.tls {
				srv.StartTLS()
				tlsc, err := TLSConfig("", true)
				if err != nil {
					t.Fatal(err)
				}
				cfg.TLS = tlsc
			} else {
				srv.Start()
			}
			defer srv.Close()
			defer close(release)
			cfg.URL = srv.URL
			b, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			got, err := b.Negotiated(t.Context())
			if err != nil || (got != nil) != tc.tls {
				t.Fatalf("negotiated %+v, %v", got, err)
			}
			clock := record.NewClock()
			rec := record.New(0)
			b.Do(t.Context(), clock, record.Request{Prompt: "x", MaxTokens: 1}, &rec)
			if !rec.OK() {
				t.Fatalf("status %q: %s", rec.Status, rec.Error)
			}
			// Milliseconds on loopback; seconds of margin for a loaded machine.
			if ttft := rec.FirstToken - rec.Sent; ttft > 5*time.Second {
				t.Errorf("TTFT %v: the request waited behind the held HEAD", ttft)
			}
		})
	}
}
