package backend

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// TestFailureClasses: a 200 that is not a stream says so with its content
// type; a connection that cannot be opened is a connect error; both on
// each client.
//
// Serial: real time: each failure must be told within 3 s.
func TestFailureClasses(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<html><title>Sign in to the gateway</title></html>")
	}))
	defer page.Close()
	whole := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"text":" a b","finish_reason":"length"}],"usage":{"completion_tokens":2}}`)
	}))
	defer whole.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name, url, endpoint, engine string
		status                      record.Status
		want                        string
	}{
		{"HTML page", page.URL, "completions", "", record.StatusBadContentType, `HTTP 200 with Content-Type "text/html; charset=utf-8", not a stream (want text/event-stream): <html><title>Sign in`},
		{"whole JSON answer", whole.URL, "chat", "", record.StatusBadContentType, `HTTP 200 with Content-Type "application/json", not a stream`},
		{"HTML page to Ollama", page.URL, "generate", "ollama", record.StatusBadContentType, `not a stream (want application/x-ndjson)`},
		{"connection refused", refused, "completions", "", record.StatusConnectError, "connection refused"},
		{"short page held open", heldServer(t, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n", chunk("<html>")),
			"completions", "", record.StatusBadContentType, `"text/html", not a stream (want text/event-stream): <html>`},
	} {
		for _, netHTTP := range []bool{false, true} {
			t.Run(tc.name+map[bool]string{false: "/lean", true: "/net-http"}[netHTTP], func(t *testing.T) {
				b, err := New(Config{URL: tc.url, Endpoint: tc.endpoint, Engine: tc.engine, Conns: 1, NetHTTP: netHTTP})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				rec := record.New(1)
				start := time.Now()
				b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 2}, &rec)
				if rec.Status != tc.status || !strings.Contains(rec.Error, tc.want) {
					t.Errorf("status %q error %q, want %q with %q", rec.Status, rec.Error, tc.status, tc.want)
				}
				if took := time.Since(start); took > 3*time.Second {
					t.Errorf("took %v", took)
				}
			})
		}
	}
}

// TestModelsError: /v1/models failing is reported as its answer, not as a
// server with no model.
func TestModelsError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		if r.URL.Path == "/info" {
			fmt.Fprint(w, `{"model_id":"m","router":"text-generation-router","version":"3.0"}`)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	_, models, err := Detect(t.Context(), NewClient(4, nil), srv.URL, "")
	if err == nil || !strings.Contains(err.Error(), "/v1/models answered HTTP 500: internal error") {
		t.Errorf("models %v, error %v: want /v1/models answered HTTP 500", models, err)
	}
}

// Retry-After in both its forms, capped at a minute; anything else is no
// wait.
func TestRetryAfterHeader(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, v string
		want    time.Duration
	}{
		{"seconds", "5", 5 * time.Second},
		{"fraction", "0.5", 500 * time.Millisecond},
		{"spaces", " 7 ", 7 * time.Second},
		{"capped", "3600", MaxRetryAfter},
		{"huge", "1e300", MaxRetryAfter},
		{"date", "Tue, 01 Dec 2026 13:00:30 GMT", 30 * time.Second},
		{"date-capped", "Tue, 01 Dec 2026 15:00:00 GMT", MaxRetryAfter},
		{"date-past", "Tue, 01 Dec 2026 12:00:00 GMT", 0},
		{"zero", "0", 0},
		{"negative", "-3", 0},
		{"nan", "NaN", 0},
		{"garbage", "soon", 0},
		{"empty", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := RetryAfter(tc.v, now); got != tc.want {
				t.Errorf("RetryAfter(%q) = %v, want %v", tc.v, got, tc.want)
			}
		})
	}
}

// FuzzRetryAfter holds any header value to a wait in [0, MaxRetryAfter].
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"5", "0.25", "Tue, 01 Dec 2026 13:00:30 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994", "-1", "NaN", "1e400", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if d := RetryAfter(v, now); d < 0 || d > MaxRetryAfter {
			t.Errorf("RetryAfter(%q) = %v, outside [0, %v]", v, d, MaxRetryAfter)
		}
	})
}
