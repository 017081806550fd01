package bench

import "testing"

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
