package analyze

import (
	"fmt"
	"math"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// Sharding is what a run merged from its shards' files (--shard I/N)
// says about each shard: per stage its requests, its throughput, how late
// it began and how far its client fell behind, and each shard's clock, so
// one slow load machine shows (docs/METRICS.md, sharded runs).
type Sharding struct {
	RunID  string       `json:"run_id"`
	Count  int          `json:"count"`
	Clocks []ShardClock `json:"clocks"`
	Rows   []ShardRow   `json:"rows"`
}

// ShardClock is one shard's file, machine and clock offset estimate.
type ShardClock struct {
	Shard int    `json:"shard"`
	File  string `json:"file"`
	Host  string `json:"host,omitempty"`
	// Method, OffsetMs and UncertaintyMs are the header's estimate of the
	// server's clock minus the shard's (record.ClockOffset).
	Method        string  `json:"method"`
	OffsetMs      float64 `json:"offset_ms"`
	UncertaintyMs float64 `json:"uncertainty_ms"`
}

// ShardRow is one shard's part of one stage, on its own.
type ShardRow struct {
	Stage string `json:"stage"` // the merged stage's label
	Index int    `json:"index"` // the stage's index in the plan
	Shard int    `json:"shard"`
	Idle  bool   `json:"idle,omitempty"` // its share was nothing
	// Requests and OK are its measured requests; AggregateTokS its output
	// tokens over its own window.
	Requests      int     `json:"requests"`
	OK            int     `json:"ok"`
	AggregateTokS float64 `json:"aggregate_tok_s"`
	// StartLateMs is when it began the stage's measured requests after
	// the planned start, both on the server's clock (nil: no plan was
	// recorded).
	StartLateMs *float64 `json:"start_late_ms"`
	// Late is its open-loop sends behind schedule; ClientQueueP99Ms the
	// p99 of its requests' wait in the client; ClientLag whether its own
	// client_lag check failed.
	Late             int     `json:"late_sends"`
	ClientQueueP99Ms float64 `json:"client_queue_p99_ms"`
	ClientLag        bool    `json:"client_lag,omitempty"`
}

// ShardFacts are what a shard's file says beyond its own figures: the
// header's shard record and when each stage began against its plan.
type ShardFacts struct {
	File  string
	Host  string
	Shard record.Shard
	// Late is, by stage index, how late the shard began the stage's
	// measured requests against the planned start, on the server's clock.
	Late map[int]time.Duration
}

// ShardStartMargin is how much later than the planned start a shard may
// begin a stage before the merged report names it: a timer's oversleep
// and a shared file system's delay are far less.
const ShardStartMargin = 100 * time.Millisecond

// ShardClockLimit is the clock offset from the server's beyond which the
// merged report names a shard: the merge corrects by the estimate, but a
// machine that far off is not synchronised (NTP) and an estimate may err.
const ShardClockLimit = 100 * time.Millisecond

// AddShards attaches to run, merged from the shards' files, each shard's
// table and the warnings that name a shard: one that began a stage late,
// one whose clock is far off the server's, and each shard's own
// client_lag warnings. facts and runs are by shard index: runs[i] is shard
// i's file folded on its own.
func (run *Run) AddShards(facts []ShardFacts, runs []*Run) {
	sh := &Sharding{Count: len(facts)}
	if len(facts) > 0 {
		sh.RunID = facts[0].Shard.RunID
	}
	for i, f := range facts {
		c := f.Shard.Clock
		sh.Clocks = append(sh.Clocks, ShardClock{Shard: i, File: f.File, Host: f.Host, Method: c.Method, OffsetMs: record.Ms(c.Offset()), UncertaintyMs: float64(c.UncertaintyNs) / 1e6})
		if off := c.Offset(); c.Method != "none" && (off > ShardClockLimit || off < -ShardClockLimit) {
			run.Warnings = append(run.Warnings, Warning{Check: "shard_clock", Text: fmt.Sprintf(
				"shard %d/%d (%s): its clock is %+.0f ms off the server's (±%.1f ms, %s): its times were placed on the server's clock by that estimate; synchronise the load machines' clocks (NTP)",
				i, len(facts), hostOr(f), record.Ms(off), float64(c.UncertaintyNs)/1e6, c.Method)})
		}
		if c.Method == "none" {
			run.Warnings = append(run.Warnings, Warning{Check: "shard_clock", Text: fmt.Sprintf(
				"shard %d/%d (%s): no clock offset could be estimated (%s): its clock was taken as the server's, so its times are only as good as its clock's synchronisation", i, len(facts), hostOr(f), c.Error)})
		}
	}
	for _, st := range run.Stages {
		for i, f := range facts {
			row := ShardRow{Stage: Label(st.Stage), Index: st.Index, Shard: i}
			for _, p := range f.Shard.Stages {
				if p.Stage == st.Index {
					row.Idle = p.Idle
				}
			}
			if late, ok := f.Late[st.Index]; ok {
				v := record.Ms(late)
				row.StartLateMs = &v
				if late > ShardStartMargin && !row.Idle {
					run.Warnings = append(run.Warnings, Warning{Stage: Label(st.Stage), Check: "shard_late_start", Text: fmt.Sprintf(
						"shard %d/%d (%s) began its measured requests %.0f ms after the planned start (more than %.0f ms): the shards did not load the server together at first; its start, its machine's load or its clock is to blame",
						i, len(facts), hostOr(f), v, record.Ms(ShardStartMargin))})
				}
			}
			if s := findIndex(runs[i], st.Index); s != nil {
				row.Requests, row.OK, row.AggregateTokS, row.Late, row.ClientQueueP99Ms = s.Requests, s.OK, s.AggregateTokS, s.Late, s.ClientQueue.P99
				if math.IsNaN(row.ClientQueueP99Ms) {
					row.ClientQueueP99Ms = 0
				}
				for _, w := range runs[i].Warnings {
					if w.Check == "client_lag" && w.Stage == Label(s.Stage) {
						row.ClientLag = true
						run.Warnings = append(run.Warnings, Warning{Stage: Label(st.Stage), Check: "shard_client_lag", Text: fmt.Sprintf("shard %d/%d (%s) fell behind: %s", i, len(facts), hostOr(f), w.Text)})
					}
				}
			}
			sh.Rows = append(sh.Rows, row)
		}
	}
	run.Sharding = sh
	run.gate() // a shard's client lag withholds the verdicts on its stages
}

func hostOr(f ShardFacts) string {
	if f.Host != "" {
		return f.Host
	}
	return f.File
}

// findIndex is run's stage of plan index i, nil if it has none.
func findIndex(run *Run, i int) *Stage {
	if run == nil {
		return nil
	}
	for k := range run.Stages {
		if run.Stages[k].Index == i {
			return &run.Stages[k]
		}
	}
	return nil
}
