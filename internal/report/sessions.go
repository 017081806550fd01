package report

import (
	"fmt"
	"io"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/summary"
)

// Sessions writes, for each stage of agent sessions, what a session was:
// how long it took and where the time went (the model, tools, sub-agents),
// its turns and tokens, and its first turns' TTFT and TPOT beside its
// later ones'; for a replayed agent trace, the prefix cache's measured
// hit beside the trace's ceiling.
func Sessions(w io.Writer, stages []summary.Stage, ceiling float64) {
	for _, s := range stages {
		ss := s.Sessions
		if ss == nil || ss.Sessions+ss.Failed == 0 {
			continue
		}
		fmt.Fprintf(w, "%s, agent sessions (a session is its turns and its sub-agents', from its first turn's schedule to its last turn's end; means per session; docs/METRICS.md §3):\n\n", analyze.Label(s))
		fmt.Fprintln(w, "| sessions | failed | latency p50/p99 s | turns | sub-agents | in tokens | out tokens | cached tokens | model s | tools s | sub-agents s |")
		fmt.Fprintln(w, "| -------: | -----: | ----------------: | ----: | ---------: | --------: | ---------: | ------------: | ------: | ------: | -----------: |")
		fmt.Fprintf(w, "| %d | %d | %s | %.1f | %.1f | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f |\n", ss.Sessions, ss.Failed,
			latency(ss.Latency.P50/1e3, ss.Latency.P99/1e3), ss.Turns, ss.SubAgents, ss.InputTokens, ss.OutputTokens, ss.CachedTokens, ss.ModelS, ss.ToolS, ss.AgentS)
		fmt.Fprintf(w, "\nTTFT p50/p99 ms: first turns %s (n=%d), later turns %s (n=%d); TPOT p50/p99 ms: first turns %s, later turns %s\n\n",
			latency(ss.FirstTTFT.P50, ss.FirstTTFT.P99), ss.FirstTTFT.N, latency(ss.LaterTTFT.P50, ss.LaterTTFT.P99), ss.LaterTTFT.N,
			latency(ss.FirstTPOT.P50, ss.FirstTPOT.P99), latency(ss.LaterTPOT.P50, ss.LaterTPOT.P99))
		if ceiling > 0 && s.PromptTokens > 0 {
			fmt.Fprintf(w, "prefix cache: %.1f%% of prompt tokens served from the cache (the server's cached tokens), beside a ceiling of %.1f%% from the trace's hash ids (every session once, a cache that forgets nothing)\n\n",
				100*float64(s.CachedTokens)/float64(s.PromptTokens), 100*ceiling)
		}
	}
}
