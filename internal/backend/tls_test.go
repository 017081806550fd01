package backend

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/workload"
)

// An https:// target's negotiated TLS is what its requests then use: the
// version, the ALPN protocol (h2 only when HTTP/2 is asked for and the
// server offers it) and the HTTP version the streams were served over.
func TestNegotiatedTLS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name               string
		serverH2, clientH2 bool
		alpn, proto        string
	}{
		{"http1", false, false, "", "HTTP/1.1"},
		{"server-offers-h2", true, false, "", "HTTP/1.1"},
		{"h2", true, true, "h2", "HTTP/2.0"},
		{"client-asks-h2-server-refuses", false, true, "http/1.1", "HTTP/1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			protos := map[string]int{}
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost {
					http.Error(w, "POST only", http.StatusMethodNotAllowed)
					return
				}
				mu.Lock()
				protos[r.Proto]++
				mu.Unlock()
				w.Header().Set("Content-Type", "text/event-stream")
				for i := range 3 {
					fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"t%d\",\"finish_reason\":null}]}\n\n", i)
					w.(http.Flusher).Flush()
				}
				fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n")
			}))
			srv.EnableHTTP2 = tc.serverH2
			srv.StartTLS()
			defer srv.Close()
			tlsc, err := TLSConfig("", true)
			if err != nil {
				t.Fatal(err)
			}
			b, err := New(Config{URL: srv.URL, Endpoint: "completions", Model: "m", Conns: 2, TLS: tlsc, HTTP2: tc.clientH2})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			got, err := b.Negotiated(t.Context())
			if err != nil || got == nil {
				t.Fatalf("negotiated %+v, %v", got, err)
			}
			if got.Version != "TLS 1.3" || got.ALPN != tc.alpn || got.Proto != tc.proto || got.Cipher == "" {
				t.Errorf("negotiated %+v, want TLS 1.3, ALPN %q, %s and a cipher", got, tc.alpn, tc.proto)
			}
			clock := record.NewClock()
			wl := workload.Synthetic{InputTokens: 8, OutputTokens: 4, IgnoreEOS: true, Seed: 1}
			for i := range 3 {
				rec := record.New(i)
				b.Do(context.Background(), clock, wl.Request(i), &rec)
				if !rec.OK() {
					t.Fatalf("request %d: %s %s", i, rec.Status, rec.Error)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if protos[tc.proto] != 3 {
				t.Errorf("the requests came over %v, want all 3 over %s as negotiated", protos, tc.proto)
			}
		})
	}
	// A plain http:// target has no TLS to record.
	b, _ := New(Config{URL: "http://127.0.0.1:1", Endpoint: "completions"})
	if got, err := b.Negotiated(t.Context()); got != nil || err != nil {
		t.Errorf("http:// negotiated %+v, %v; want nothing", got, err)
	}
}
