package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tokperf/tokperf/internal/shard"
)

// The DCGM path given as /path goes under the target's path, its query
// kept, not after the query.
func TestGPUMetricsURLKeepsQuery(t *testing.T) {
	t.Parallel()
	s := &Session{base: "http://h/m?key=S", t: Target{GPUMetrics: "/dcgm"}}
	if got, want := s.gpuMetricsURL(), "http://h/m/dcgm?key=S"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := s.gpuMetrics(), "http://h/m/dcgm?key=xxxxx"; got != want {
		t.Errorf("in the setup: got %q, want %q", got, want)
	}
}

// The shard's clock probe asks the target's /v1/models under its path,
// with its query (a key) kept; appending sent GET /m?key=S/v1/models.
// Real time: the probe reads Date headers for about 2.5 s.
func TestClockProbeURLKeepsQuery(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("2.5 s of real time")
	}
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
	}))
	defer srv.Close()
	sess := &Session{base: srv.URL + "/m?key=S", client: srv.Client()}
	rec, _ := startShard(context.Background(), &shard.Config{Index: 0, Count: 2, RunID: "r"}, sess, nil, io.Discard)
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0] != "/m/v1/models?key=S" {
		t.Errorf("probed %q, want /m/v1/models?key=S", got)
	}
	if strings.Contains(rec.Clock.URL, "key=S") {
		t.Errorf("the header keeps the key: %s", rec.Clock.URL)
	}
}
