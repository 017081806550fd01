package report

import (
	"bytes"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
)

// A run merged from two shards shows their table in text, markdown and
// html, with the warnings that name a late shard and one with a skewed
// clock; each format has a golden file.
func TestShardsGolden(t *testing.T) {
	t.Parallel()
	merged := run() // its two stages stand for the merged figures
	var facts []analyze.ShardFacts
	var runs []*analyze.Run
	for i := range 2 {
		sh := record.Shard{Index: i, Count: 2, RunID: "job-7", Stages: []record.ShardStage{{Stage: 0, Concurrency: 1, MyConcurrency: 1 - i, Idle: i == 1}, {Stage: 1, Concurrency: 2, MyConcurrency: 1}},
			Clock: record.ClockOffset{Method: "http-date", OffsetNs: int64(i) * int64(350*time.Millisecond), UncertaintyNs: 800_000}}
		facts = append(facts, analyze.ShardFacts{File: "shard-" + string(rune('0'+i)) + ".jsonl", Host: "node-" + string(rune('a'+i)),
			Shard: sh, Late: map[int]time.Duration{0: 2 * time.Millisecond, 1: time.Duration(1+i*250) * time.Millisecond}})
		own := run()
		if i == 1 {
			own.Stages = own.Stages[1:] // idle at C=1: no request there
		}
		runs = append(runs, own)
	}
	merged.AddShards(facts, runs)
	for _, format := range []string{"text", "markdown", "html"} {
		t.Run(format, func(t *testing.T) {
			var b bytes.Buffer
			if err := Render(&b, format, merged); err != nil {
				t.Fatal(err)
			}
			golden(t, "shards."+format, b.String())
		})
	}
}
