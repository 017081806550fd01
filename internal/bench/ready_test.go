package bench

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/memnet"
)

// A server that takes generation requests and never answers them holds the
// wait for a first generation for its timeout, not past it (each attempt's
// own 30 s overran a 10 s wait by 20 s), and the error says the timeout.
func TestFirstGenerationKeepsItsTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		quit := make(chan struct{})
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-quit:
			}
		})}
		go srv.Serve(n)
		defer srv.Close()
		defer close(quit)
		b, err := backend.New(backend.Config{URL: "http://sim", Endpoint: "completions", Model: "m", Dial: n.Dial})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		start := time.Now()
		_, err = FirstGeneration(context.Background(), b, 10*time.Second)
		if took := time.Since(start); took > 10*time.Second || err == nil || !strings.Contains(err.Error(), "within 10s") {
			t.Errorf("returned after %v: %v; want the 10 s timeout kept and named", took, err)
		}
	})
}
