package record

import "time"

// Shard says that a result file holds one shard of a run split across
// processes (--shard I/N): which one, of which run, its share of each
// stage and how its clock compares with the server's. The files of one
// run share RunID and Count; report merges them (docs/METRICS.md, sharded
// runs).
type Shard struct {
	Index int    `json:"index"` // from 0, as Kubernetes' JOB_COMPLETION_INDEX
	Count int    `json:"count"`
	RunID string `json:"run_id"`
	// StartAt is --start-at (RFC 3339), Barrier --barrier's directory;
	// either or both may be empty.
	StartAt string `json:"start_at,omitempty"`
	Barrier string `json:"barrier,omitempty"`
	// Stages are this shard's share of each stage of the plan.
	Stages []ShardStage `json:"stages"`
	Clock  ClockOffset  `json:"clock"`
}

// ShardStage is one stage of the plan: the whole run's load and this
// shard's share of it. Request ids of shard I of N are local*N+I, local
// counting this shard's requests from 0, so no two shards share an id.
type ShardStage struct {
	Stage int `json:"stage"`
	// The whole run's: concurrency (or open-loop cap), rate, measured
	// requests (0: as many as the stage's time allows) and warm-up.
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate,omitempty"`
	Requests    int     `json:"requests"`
	Warmup      int     `json:"warmup"`
	// This shard's share of each.
	MyConcurrency int     `json:"my_concurrency"`
	MyRate        float64 `json:"my_rate,omitempty"`
	MyRequests    int     `json:"my_requests"`
	MyWarmup      int     `json:"my_warmup"`
	// Idle says this shard's share is nothing: it takes part in the
	// stage's start and sends no request.
	Idle bool `json:"idle,omitempty"`
}

// ClockOffset is an estimate of the server's clock minus this machine's
// wall clock: a local wall time plus OffsetNs is the server's time.
type ClockOffset struct {
	// Method is how it was estimated: "http-date" (the edges of the
	// one-second Date header of responses from URL), or "none" when no
	// estimate was had (Error says why; the offset is then 0).
	Method string `json:"method"`
	URL    string `json:"url,omitempty"`
	// OffsetNs is the estimate, UncertaintyNs the half-width of the
	// interval it is known to lie in.
	OffsetNs      int64  `json:"offset_ns"`
	UncertaintyNs int64  `json:"uncertainty_ns"`
	Probes        int    `json:"probes,omitempty"`
	Error         string `json:"error,omitempty"`
}

// Offset is the estimate as a duration.
func (c ClockOffset) Offset() time.Duration { return time.Duration(c.OffsetNs) }

// Shift moves every time of the record by d: the record's offsets are
// then on a clock that started d earlier (shards merged onto one clock).
func (r *Record) Shift(d time.Duration) {
	for _, t := range []*time.Duration{&r.Scheduled, &r.Sent, &r.FirstByte, &r.FirstToken, &r.FirstContent, &r.LastToken, &r.Done} {
		if *t != Unset {
			*t += d
		}
	}
	if len(r.Chunks) > 0 {
		chunks := make([]Chunk, len(r.Chunks))
		for i, c := range r.Chunks {
			c.At += d
			chunks[i] = c
		}
		r.Chunks = chunks
	}
}
