package backend

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A scheme that does not match the port, or a certificate no authority of
// this machine vouches for, is named with what to do, not left as a bare
// TLS or connection error.
func TestDetectNamesTheCause(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{"data":[]}`)) })
	plain := httptest.NewServer(ok)
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(ok)
	defer tlsSrv.Close()
	for _, tc := range []struct{ name, url, want string }{
		{"https to a plain port", strings.Replace(plain.URL, "http://", "https://", 1), "give http:// instead of https://"},
		{"http to a TLS port", strings.Replace(tlsSrv.URL, "https://", "http://", 1), "https://"},
		{"unknown authority", tlsSrv.URL, "--ca-cert FILE, or --insecure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Detect(t.Context(), NewClient(2, nil), tc.url, "")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// A model list over 1 MiB is said to be one, not read as a list of no
// model.
func TestDetectOversizedModels(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"data":[`))
		for range 40000 {
			w.Write([]byte(`{"id":"model-with-a-rather-long-name"},`))
		}
		w.Write([]byte(`{"id":"last"}]}`))
	}))
	defer srv.Close()
	_, models, err := Detect(t.Context(), NewClient(2, nil), srv.URL, "")
	if err == nil || !strings.Contains(err.Error(), "over 1 MiB: not read") {
		t.Errorf("models %d, error %v; want the oversized answer named", len(models), err)
	}
}

// A proxy that wants its own credentials is named as the one answering,
// not taken for the server refusing the API key.
func TestDetectProxyAnswered(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Proxy-Authenticate", `Basic realm="corp"`)
		http.Error(w, "Proxy Authentication Required", http.StatusProxyAuthRequired)
	}))
	defer srv.Close()
	_, _, err := Detect(t.Context(), NewClient(2, nil), srv.URL, "")
	if err == nil || !strings.Contains(err.Error(), "a proxy answered 407") {
		t.Errorf("error %v, want the proxy named", err)
	}
}
