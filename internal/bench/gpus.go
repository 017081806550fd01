package bench

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/telemetry"
)

// dcgmEvery is how often a DCGM exporter is scraped during a run.
var dcgmEvery = 250 * time.Millisecond

// gpuMetricsURL is the DCGM endpoint asked for: as given, or a path on
// the target's base URL ("" when none was asked for).
func (s *Session) gpuMetricsURL() string {
	u := s.t.GPUMetrics
	if strings.HasPrefix(u, "/") {
		return backend.Under(s.base, u)
	}
	return u
}

// gpuMetrics is the endpoint as written in the setup: no credentials.
func (s *Session) gpuMetrics() string {
	if s.t.GPUMetrics == "" {
		return ""
	}
	return backend.Redact(s.gpuMetricsURL())
}

// watchGPUs starts the run's GPU watcher: the DCGM exporter when one is
// asked for (it must answer now, with GPU series, or the run stops before
// it starts), else a local nvidia-smi where there is one (nil where not).
func (s *Session) watchGPUs(ctx context.Context, clock record.Clock) (*telemetry.GPUWatcher, error) {
	u := s.gpuMetricsURL()
	if u == "" {
		return telemetry.WatchGPUs(ctx, clock), nil
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: s.tls}}
	gpus, err := telemetry.ScrapeDCGM(ctx, client, u)
	if err != nil {
		return nil, fmt.Errorf("--gpu-metrics: %w", err)
	}
	fmt.Fprintf(s.env.progress(), "GPU readings from the DCGM exporter at %s: %d × %s\n", backend.Redact(u), len(gpus), gpus[0].Name)
	return telemetry.WatchDCGM(ctx, client, u, clock, dcgmEvery), nil
}
