package backend

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
)

// A stream that never ends its line, or whose data lines never end their
// event, costs the request maxEvent, not 64 MiB or the machine: it fails
// with that reason, whichever client reads it; SSE and NDJSON alike.
func TestEndlessLineFailsTheRequest(t *testing.T) {
	t.Parallel()
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	endless := func(w http.ResponseWriter, first, each []byte) {
		w.Write(first)
		for range 3 * maxEvent >> 20 {
			if _, err := w.Write(each); err != nil {
				return
			}
		}
	}
	for _, tc := range []struct{ name, endpoint, engine, ctype, first, each string }{
		{"one SSE line", "completions", "", "text/event-stream", "data: ", string(chunk)},
		{"SSE data lines", "completions", "", "text/event-stream", "", "data: " + string(chunk) + "\n"},
		{"one NDJSON line", "generate", "ollama", "application/x-ndjson", "", string(chunk)},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", tc.ctype)
			endless(w, []byte(tc.first), []byte(tc.each))
		}))
		defer srv.Close()
		for _, netHTTP := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "/lean", true: "/net-http"}[netHTTP], func(t *testing.T) {
				b, err := New(Config{URL: srv.URL, Endpoint: tc.endpoint, Engine: tc.engine, Conns: 1, NetHTTP: netHTTP})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				rec := record.New(1)
				b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 2}, &rec)
				if rec.Status != record.StatusStreamError || !strings.Contains(rec.Error, "over 8 MiB") {
					t.Errorf("status %q error %.200q, want %q naming the 8 MiB cap", rec.Status, rec.Error, record.StatusStreamError)
				}
			})
		}
	}
}

// A compressed stream fails its request saying so, whichever client reads
// it (read as it is, it was malformed chunks).
func TestCompressedStreamNamed(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		zw.Write([]byte("data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n"))
		zw.Close()
	}))
	defer srv.Close()
	for _, netHTTP := range []bool{false, true} {
		b, err := New(Config{URL: srv.URL, Endpoint: "completions", Conns: 1, NetHTTP: netHTTP})
		if err != nil {
			t.Fatal(err)
		}
		rec := record.New(1)
		b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 1}, &rec)
		b.Close()
		if rec.Status != record.StatusStreamError || !strings.Contains(rec.Error, "compressed (Content-Encoding: gzip)") {
			t.Errorf("net/http %v: status %q error %q, want the compression named", netHTTP, rec.Status, rec.Error)
		}
	}
}
