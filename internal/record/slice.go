package record

import "time"

// Slice is one time slice of a stage (--slice, soak): the figures of the
// requests that finished in it and what the server and the GPUs said over
// it. A sliced run writes one as each slice ends, so a run of any length
// keeps only the current slice's requests in memory, and an interrupted
// one keeps every finished slice. Times are offsets on the run's clock;
// latencies are milliseconds; a distribution with N = 0 has no figures.
type Slice struct {
	Stage int           `json:"stage"`
	Index int           `json:"slice"` // 0 is the stage's first
	From  time.Duration `json:"from_ns"`
	To    time.Duration `json:"to_ns"`

	Requests     int `json:"requests"` // finished in the slice, any status
	OK           int `json:"ok"`
	Errors       int `json:"errors"` // failed (cancelled ones aside)
	OutputTokens int `json:"output_tokens"`
	// AggregateTokS is the output tokens of the ok requests that finished
	// in the slice over its length.
	AggregateTokS float64   `json:"aggregate_tok_s"`
	TTFT          SliceDist `json:"ttft_ms"`
	ITL           SliceDist `json:"itl_ms"`
	TPOT          SliceDist `json:"tpot_ms"`
	E2E           SliceDist `json:"e2e_ms"`

	// What the server's /metrics said over the slice (absent without it):
	// scrapes, the last resident memory, the preemptions counted in it,
	// the most running and waiting requests and the fullest KV cache.
	ServerSamples int     `json:"server_samples,omitempty"`
	ResidentBytes float64 `json:"resident_bytes,omitempty"`
	Preemptions   float64 `json:"preemptions,omitempty"`
	MaxRunning    float64 `json:"max_running,omitempty"`
	MaxWaiting    float64 `json:"max_waiting,omitempty"`
	MaxKVShare    float64 `json:"max_kv_share,omitempty"`
	// The GPUs over the slice (absent without nvidia-smi): the most memory
	// in use on all of them together, and their mean power together.
	GPUMemMiB float64 `json:"gpu_mem_mib,omitempty"`
	GPUPowerW float64 `json:"gpu_power_w,omitempty"`
	// Host is what the client's machine did over the slice (absent in
	// files written before it was read).
	Host *Host `json:"host,omitempty"`
}

// SliceDist is a slice's distribution of a latency: its size, median and
// 99th percentile (nearest rank).
type SliceDist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// Len is the slice's length.
func (s *Slice) Len() time.Duration { return s.To - s.From }
