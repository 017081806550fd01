package report

import (
	"fmt"
	"io"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/summary"
)

// Turns writes, for each stage of conversations, a table of its figures
// turn by turn: as the history grows the prompt lengthens, and a prefix
// cache that keeps the history serves more of it, so TTFT falls or rises
// with what it computes.
func Turns(w io.Writer, stages []summary.Stage) {
	for _, s := range stages {
		if len(s.Turns) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s, by turn of the conversations (TTFT = first token - sent; prompt and cached tokens as the server counted them, per request):\n\n", analyze.Label(s))
		fmt.Fprintln(w, "| turn | ok | TTFT p50/p99 ms | prompt tokens | cached tokens |")
		fmt.Fprintln(w, "| ---: | -: | --------------: | ------------: | ------------: |")
		for _, t := range s.Turns {
			fmt.Fprintf(w, "| %d | %d | %s | %.0f | %.0f |\n", t.Turn, t.OK, latency(t.TTFT.P50, t.TTFT.P99), t.MeanPromptTokens, t.MeanCachedTokens)
		}
		fmt.Fprintln(w)
	}
}
