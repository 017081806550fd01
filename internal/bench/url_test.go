package bench

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/backend"
)

// --url http://host:8000/v1, as an OpenAI SDK's base URL is written: the
// /v1 is dropped, and said, instead of "is this an inference server?";
// an engine known only by owned_by is measured on its OpenAI routes
// (issue 37).
func TestURLWithV1AndOwnedBy(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r) // a gateway passing only /v1/*
			return
		}
		w.Write([]byte(`{"object":"list","data":[{"id":"m","object":"model","owned_by":"sglang"}]}`))
	}))
	defer srv.Close()
	var progress bytes.Buffer
	s, err := Connect(t.Context(), "run", Target{URL: srv.URL + "/v1"}, &Env{Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	defer s.Close()
	if s.Setup.URL != srv.URL || !strings.Contains(progress.String(), "ends in /v1") {
		t.Errorf("URL %s, progress %q; want %s, the /v1 said to be dropped", s.Setup.URL, progress.String(), srv.URL)
	}
	if s.Setup.Server.Engine != "sglang" || s.Setup.Endpoint != "completions" || s.Setup.Server.Evidence[0] != backend.OwnedByEvidence {
		t.Errorf("engine %s on %s (%v); want sglang on completions", s.Setup.Server.Engine, s.Setup.Endpoint, s.Setup.Server.Evidence)
	}
}
