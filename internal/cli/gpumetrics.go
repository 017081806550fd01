package cli

import (
	"net/url"
	"strings"
)

const gpuMetricsHelp = "read the server's GPUs (power, utilization, memory, per GPU) from an NVIDIA DCGM exporter's Prometheus endpoint, e.g. http://gpu-host:9400/metrics, instead of a local nvidia-smi (a path such as /dcgm/metrics is on --url; the embedded simulator serves one there)"

// checkGPUMetrics accepts an http(s) URL with a host, or a path on the target.
func checkGPUMetrics(v string) error {
	if v == "" || strings.HasPrefix(v, "/") {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usagef("--gpu-metrics %q: want a DCGM exporter's http(s) URL, e.g. http://gpu-host:9400/metrics, or a path on --url", v)
	}
	return nil
}
