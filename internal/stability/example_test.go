package stability_test

import (
	"fmt"
	"time"

	"github.com/tokperf/tokperf/internal/stability"
)

// A p99 TTFT that jumps from about 1.2 s to 1.7 s at minute 35 of an hour,
// beside a flat throughput and a server leaking a gigabyte an hour.
func ExampleJudge() {
	var at []time.Duration
	var ttft, agg, mem []float64
	for i := range 60 {
		at = append(at, time.Duration(i)*time.Minute)
		wobble := float64(i%3-1) * 10
		level := 1210.0
		if i >= 35 {
			level = 1710
		}
		ttft = append(ttft, level+wobble)
		agg = append(agg, 2000+wobble)
		mem = append(mem, 4e9+1e9*float64(i)/60)
	}
	v := stability.Judge(stability.Input{Slice: time.Minute, At: at, Warmup: -1, Series: []stability.Series{
		{Name: "aggregate", Field: "aggregate_tok_s", Unit: stability.TokS, Values: agg},
		{Name: "p99 TTFT", Field: "ttft_p99_ms", Unit: stability.Ms, Values: ttft},
		{Name: "server memory", Field: "resident_bytes", Unit: stability.Bytes, Values: mem},
	}})
	fmt.Println(v.Text)
	// Output:
	// degrading: aggregate +0.0% over 56m [+0.0%, +0.0%]; p99 TTFT +41% at 35m (change point, 1.21 s → 1.71 s); server memory +0.93 GB over 56m [0.93, 0.93] (57 slices, 3 warm-up slices left out)
}
