package report

import (
	"fmt"
	"io"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
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

// reasoningLine sets a reasoning stage's first token beside its first
// visible content, with its reasoning tokens counted apart.
func reasoningLine(s summary.Stage) string {
	ttfo := "no visible content"
	if s.TTFO.N > 0 {
		ttfo = latency(s.TTFO.P50, s.TTFO.P99) + " ms"
	}
	return fmt.Sprintf("%s: reasoning %d of %d output tokens (%.0f%%), content %d; TTFT (first token, any channel) p50/p99 %s ms, TTFO (first visible content) p50/p99 %s; decode tok/s %.1f counts every generated token, reasoning included",
		analyze.Label(s), s.ReasoningTokens, s.OutputTokens, 100*float64(s.ReasoningTokens)/float64(max(s.OutputTokens, 1)), s.OutputTokens-s.ReasoningTokens,
		latency(s.TTFT.P50, s.TTFT.P99), ttfo, s.DecodeTokS.Mean)
}

// toolLine says how many requests answered with a tool call and the
// output tokens their calls took; their TTFO is the call's first delta.
func toolLine(s summary.Stage) string {
	return fmt.Sprintf("%s: %d of %s answered with a tool call, %d of %d output tokens in the calls (from their chunks); a call's first delta is its TTFO",
		analyze.Label(s), s.ToolCalled, record.Plural(s.OK, "request"), s.ToolTokens, s.OutputTokens)
}
