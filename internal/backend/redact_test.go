package backend

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://host:8000/?api_key=SECRET":           "http://host:8000/?api_key=xxxxx",
		"http://host/v1?api_key=SECRET&model=m":      "http://host/v1?api_key=xxxxx&model=xxxxx",
		"http://user:SECRET@host/":                   "http://xxxxx@host/",
		"https://SECRET@host/p?SECRET":               "https://xxxxx@host/p?xxxxx",
		"http://host:8000":                           "http://host:8000",
		"http://host/#SECRET":                        "http://host/",
		"http://host/v1/models?api_key=SECRET&x=1#f": "http://host/v1/models?api_key=xxxxx&x=xxxxx",
		"http://[::1":                                "(unparseable URL)",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestQueryURL: a base URL with a query (an API key) is probed with each
// route under its path and the query kept, and no message shows the key.
func TestQueryURL(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("api_key") != "SECRET" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/v1/models":
			json.NewEncoder(w).Encode(map[string]any{"data": []map[string]any{{"id": "m"}}})
		case "/info":
			json.NewEncoder(w).Encode(map[string]any{"model_id": "m", "router": "text-generation-router", "version": "3.0"})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	s, models, err := Detect(t.Context(), NewClient(4, nil), srv.URL+"/?api_key=SECRET", "")
	if err != nil || s.Engine != "tgi" || len(models) != 1 {
		t.Fatalf("detected %q, models %v, error %v: want tgi with model m", s.Engine, models, err)
	}
	if _, err := WaitReady(t.Context(), NewClient(4, nil), srv.URL+"/?api_key=SECRET", "", ProbeTimeout); err != nil {
		t.Errorf("WaitReady: %v", err)
	}

	// Nothing listens on a closed server's port: every message names the
	// URL, and none shows the key.
	srv.Close()
	dead := srv.URL + "/?api_key=SECRET"
	_, _, err = Detect(t.Context(), NewClient(4, nil), dead, "")
	if err == nil || strings.Contains(err.Error(), "SECRET") || !strings.Contains(err.Error(), "/v1/models?api_key=xxxxx") {
		t.Errorf("detect on a dead server: %v", err)
	}
	for _, netHTTP := range []bool{false, true} {
		b, err := New(Config{URL: dead, Endpoint: "completions", Conns: 1, NetHTTP: netHTTP})
		if err != nil {
			t.Fatal(err)
		}
		rec := record.New(1)
		b.Do(t.Context(), record.NewClock(), record.Request{Prompt: "x", MaxTokens: 1}, &rec)
		if rec.OK() || strings.Contains(rec.Error, "SECRET") || !strings.Contains(rec.Error, "/v1/completions?api_key=xxxxx") {
			t.Errorf("net/http %v: status %q, error %q: want the URL with its key masked", netHTTP, rec.Status, rec.Error)
		}
	}
	u := "http://user:SECRET@" + strings.TrimPrefix(dead, "http://")
	if _, _, err := Detect(t.Context(), NewClient(4, nil), u, ""); err == nil || strings.Contains(err.Error(), "SECRET") {
		t.Errorf("user info shown: %v", err)
	}
}
