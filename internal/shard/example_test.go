package shard_test

import (
	"fmt"

	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/shard"
)

// A closed-loop stage of C=10 and 100 requests over four shards: the
// slots split as evenly as they go, the requests with the slots.
func ExampleConfig_Split() {
	for i := range 4 {
		c := &shard.Config{Index: i, Count: 4, RunID: "job1"}
		p, rec := c.Split(runner.Plan{Concurrency: 10, Requests: 100, Warmup: 10})
		fmt.Printf("%s: C=%d, %d requests, %d warm-up, idle %v\n", c.Label(), p.Concurrency, p.Requests, p.Warmup, rec.Idle)
	}
	// Output:
	// shard 0/4: C=3, 30 requests, 3 warm-up, idle false
	// shard 1/4: C=3, 30 requests, 3 warm-up, idle false
	// shard 2/4: C=2, 20 requests, 2 warm-up, idle false
	// shard 3/4: C=2, 20 requests, 2 warm-up, idle false
}
