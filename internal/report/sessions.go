package report

import (
	"fmt"
	"io"
	"strings"

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

// tableHTML is a report's text block as html: its markdown table's rows
// (the separator left out) a table, every other line a paragraph.
func tableHTML(s string) string {
	var b strings.Builder
	inTable := false
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		row := strings.HasPrefix(l, "|")
		if inTable && !row {
			b.WriteString("</table>\n")
			inTable = false
		}
		switch {
		case l == "":
		case row && strings.Trim(l, "|-: ") == "":
			// the separator line
		case row:
			cell := "td"
			if !inTable {
				b.WriteString("<table>")
				inTable, cell = true, "th"
			}
			b.WriteString("<tr>")
			for _, c := range strings.Split(strings.Trim(l, "|"), "|") {
				fmt.Fprintf(&b, "<%s>%s</%s>", cell, text(strings.TrimSpace(c)), cell)
			}
			b.WriteString("</tr>\n")
		default:
			fmt.Fprintf(&b, "<p>%s</p>\n", text(l))
		}
	}
	if inTable {
		b.WriteString("</table>\n")
	}
	return b.String()
}

// sessionsHTML is a stage's agent sessions (Sessions) on the page; empty
// for a stage without them.
func sessionsHTML(s summary.Stage, ceiling float64) string {
	var b strings.Builder
	Sessions(&b, []summary.Stage{s}, ceiling)
	return tableHTML(b.String())
}

// capacityHTML is a run's capacity search (Capacity) on the page; empty
// without one.
func capacityHTML(c *analyze.Capacity) string {
	if c == nil {
		return ""
	}
	var b strings.Builder
	Capacity(&b, c)
	return "<h3>Capacity under the SLO</h3>\n" + tableHTML(b.String())
}
