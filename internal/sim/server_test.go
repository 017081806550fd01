package sim

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

func TestLoadingThenReadyAndTrace(t *testing.T) {
	t.Parallel()
	p := mustProfile(t, "tiny")
	p.LoadS = 2
	serveVirtual(t, p, func(c *http.Client, s *Server) {
		if code, _, _ := do(t, c, "GET", "/health", ""); code != 503 {
			t.Errorf("/health while loading: %d, want 503", code)
		}
		if code, _, _ := do(t, c, "POST", "/v1/completions", `{"prompt":"a","max_tokens":2}`); code != 503 {
			t.Errorf("generation while loading: %d, want 503", code)
		}
		time.Sleep(2 * time.Second)
		if code, _, _ := do(t, c, "GET", "/health", ""); code != 200 {
			t.Errorf("/health after loading: %d, want 200", code)
		}
		do(t, c, "POST", "/v1/completions", `{"prompt":"a b","max_tokens":5,"stream":true,"ignore_eos":true}`)
		_, _, body := do(t, c, "GET", "/sim/trace", "")
		var tr struct {
			Requests []TraceRequest `json:"requests"`
		}
		if err := json.Unmarshal(body, &tr); err != nil {
			t.Fatal(err)
		}
		if len(tr.Requests) != 1 || tr.Requests[0].OutputTokens != 5 || len(tr.Requests[0].Chunks) != 5 || tr.Requests[0].Status != "ok" {
			t.Errorf("trace %+v, want one ok request of 5 tokens in 5 chunks", tr.Requests)
		}
		if inproc := s.Trace(); len(inproc) != 1 || inproc[0].PromptTokens != 2 {
			t.Errorf("in-process trace %+v", inproc)
		}
	})
}
