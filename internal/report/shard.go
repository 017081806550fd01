package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
)

// shardCols are the columns of a merged run's per-shard table.
var shardCols = []Column{
	{Name: "stage", Prec: -1}, {Name: "shard", Prec: 0}, {Name: "host", Prec: -1}, {Name: "requests", Prec: 0}, {Name: "ok", Prec: 0},
	{Name: "aggregate", Unit: "tok/s", Prec: 1}, {Name: "start late", Unit: "ms", Prec: 1}, {Name: "late sends", Prec: 0},
	{Name: "client queue p99", Unit: "ms", Prec: 2}, {Name: "client lag", Prec: -1}, {Name: "clock offset", Unit: "ms", Prec: 1}, {Name: "clock ±", Unit: "ms", Prec: 1},
}

// shardTable is a merged run's shards, one row per stage and shard.
func shardTable(r *analyze.Run) *Table {
	sh := r.Sharding
	t := &Table{Columns: shardCols, Title: fmt.Sprintf("shards of run %s (%d)", sh.RunID, sh.Count)}
	for _, row := range sh.Rows {
		c := sh.Clocks[row.Shard]
		late := math.NaN()
		if row.StartLateMs != nil {
			late = *row.StartLateMs
		}
		lag := ""
		switch {
		case row.Idle:
			lag = "idle"
		case row.ClientLag:
			lag = "yes"
		}
		t.Rows = append(t.Rows, []any{row.Stage, row.Shard, c.Host, row.Requests, row.OK, row.AggregateTokS, late, row.Late, row.ClientQueueP99Ms, lag, c.OffsetMs, c.UncertaintyMs})
	}
	t.Lines = append(t.Lines, ShardLine(r))
	return t
}

// ShardLine says how a merged run's figures were made.
func ShardLine(r *analyze.Run) string {
	sh := r.Sharding
	methods := map[string]bool{}
	for _, c := range sh.Clocks {
		methods[c.Method] = true
	}
	how := "each shard's clock offset from the server's Date header"
	if methods["none"] {
		how = "each shard's clock offset from the server's Date header where one was had (else its own clock)"
	}
	return fmt.Sprintf("merged from %d shards of run %s: every shard's requests in one set of figures, their times placed on the server's clock by %s; a stage's window is the union of the shards' (docs/METRICS.md, sharded runs)", sh.Count, sh.RunID, how)
}

// Shards writes a merged run's per-shard table in the text report.
func Shards(w io.Writer, r *analyze.Run) {
	if r.Sharding == nil {
		return
	}
	t := shardTable(r)
	head := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		head[i] = c.Head()
	}
	var rows [][]string
	for _, row := range t.Rows {
		cells := make([]string, len(row))
		for i, v := range row {
			cells[i] = cell(v, t.Columns[i].Prec)
			if cells[i] == "" {
				cells[i] = "-"
			}
		}
		rows = append(rows, cells)
	}
	fmt.Fprintln(w, t.Lines[0])
	aligned(w, head, rows, 0)
}

// shardsHTML is a merged run's per-shard table as HTML.
func shardsHTML(b *strings.Builder, r *analyze.Run) {
	if r.Sharding == nil {
		return
	}
	t := shardTable(r)
	fmt.Fprintf(b, "<h3>%s</h3>\n<p>%s</p>\n<table><tr>", text(t.Title), text(t.Lines[0]))
	for _, c := range t.Columns {
		fmt.Fprintf(b, "<th>%s</th>", text(c.Head()))
	}
	b.WriteString("</tr>\n")
	for _, row := range t.Rows {
		b.WriteString("<tr>")
		for i, v := range row {
			cl := ""
			if t.Columns[i].Prec < 0 {
				cl = ` class="l"`
			}
			fmt.Fprintf(b, "<td%s>%s</td>", cl, text(cell(v, t.Columns[i].Prec)))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}
