package report

import (
	"fmt"
	"io"

	"github.com/tokperf/tokperf/internal/analyze"
)

// Capacity writes a capacity search's levels, each with its per-turn
// TTFT and TPOT p99 and their intervals, and its answer.
func Capacity(w io.Writer, c *analyze.Capacity) {
	if c == nil {
		return
	}
	fmt.Fprintln(w, "\ncapacity under the SLO (--until-slo): per-turn p99s of each level's sessions (the first round's left out), 95% intervals over blocks of half a round's sessions:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| C | sessions | blocks | TTFT p99 ms [95%] | TPOT p99 ms [95%] | verdict |")
	fmt.Fprintln(w, "| -: | -------: | -----: | ----------------: | ----------------: | :------ |")
	for _, lv := range c.Levels {
		fmt.Fprintf(w, "| %d | %d | %d | %s | %s | %s |\n", lv.Concurrency, lv.Sessions, lv.Blocks, lv.TTFT, lv.TPOT, lv.Verdict)
	}
	fmt.Fprintf(w, "\ncapacity: %s\n", c.Answer)
}
