package record

import "time"

// ServerSample is one scrape of the server's Prometheus /metrics during a
// stage, at an offset on the run's clock, keeping the engine's names only.
type ServerSample struct {
	Stage  int                `json:"stage"`
	At     time.Duration      `json:"at_ns"`
	Values map[string]float64 `json:"values"`
}

// GPUSample is one reading of one GPU (from nvidia-smi) during a stage.
type GPUSample struct {
	Stage       int           `json:"stage"`
	At          time.Duration `json:"at_ns"`
	Index       int           `json:"index"`
	Name        string        `json:"name"`
	MemUsedMiB  float64       `json:"mem_used_mib"`
	MemTotalMiB float64       `json:"mem_total_mib"`
	UtilPct     float64       `json:"util_pct"`
	PowerW      float64       `json:"power_w"`
}
