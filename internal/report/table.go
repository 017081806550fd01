package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/check"
	"github.com/tokperf/tokperf/internal/stats"
)

// Table is a result as numbers: one column per figure with its unit, one
// value per cell. CSV and Markdown are written from it.
type Table struct {
	Columns []Column
	Rows    [][]any // float64, int, bool or string; NaN is a blank
	// Lines follow the table in Markdown: warnings, verdicts, readings.
	Lines []string
	// Title heads the Markdown.
	Title string
}

// Column is one figure: a name and its unit, and how many decimals a
// person needs.
type Column struct {
	Name string // words, e.g. "TTFT p50"
	Unit string // ms, tok/s, s, tokens … ("" for a count or a label)
	Prec int
}

// Key is the column's CSV name: words and unit in snake_case, e.g. ttft_p50_ms.
func (c Column) Key() string {
	k := strings.ToLower(c.Name)
	if c.Unit != "" {
		k += " " + strings.NewReplacer("/", "_", "%", "pct").Replace(c.Unit)
	}
	return strings.NewReplacer(" ", "_", "-", "_", "/", "_", "(", "", ")", "", "×", "x").Replace(k)
}

// Head is the column's Markdown heading, e.g. "TTFT p50 ms".
func (c Column) Head() string {
	if c.Unit == "" {
		return c.Name
	}
	return c.Name + " " + c.Unit
}

func csvReporter(result any) (Reporter, error) {
	t, err := tableOf(result)
	if err != nil {
		return nil, err
	}
	if r, ok := result.(*analyze.Run); ok && sliced(r) {
		t = sliceTable(r) // a sliced run's CSV is its slices, to plot
	}
	return func(w io.Writer) error {
		cw := csv.NewWriter(w)
		head := make([]string, len(t.Columns))
		for i, c := range t.Columns {
			head[i] = c.Key()
		}
		cw.Write(head)
		for _, r := range t.Rows {
			row := make([]string, len(r))
			for i, v := range r {
				row[i] = cell(v, -1)
			}
			cw.Write(row)
		}
		cw.Flush()
		return cw.Error()
	}, nil
}

func markdownReporter(result any) (Reporter, error) {
	t, err := tableOf(result)
	if err != nil {
		return nil, err
	}
	if r, ok := result.(*analyze.Run); ok && r.Sharding != nil {
		first, more := markdownTable(t), markdownTable(shardTable(r))
		return func(w io.Writer) error {
			if err := first(w); err != nil {
				return err
			}
			fmt.Fprintln(w)
			return more(w)
		}, nil
	}
	if r, ok := result.(*analyze.Run); ok && sliced(r) {
		more := sliceTable(r)
		first := markdownTable(t)
		return func(w io.Writer) error {
			if err := first(w); err != nil {
				return err
			}
			fmt.Fprintln(w)
			return markdownTable(more)(w)
		}, nil
	}
	return markdownTable(t), nil
}

// markdownTable writes t as Markdown: its title, the table, its lines.
func markdownTable(t *Table) Reporter {
	return func(w io.Writer) error {
		if t.Title != "" {
			fmt.Fprintf(w, "### %s\n\n", mdEscape(t.Title))
		}
		var head, sep []string
		for _, c := range t.Columns {
			head = append(head, mdEscape(c.Head()))
			if c.Unit == "" && c.Prec < 0 {
				sep = append(sep, "---")
			} else {
				sep = append(sep, "--:")
			}
		}
		fmt.Fprintf(w, "| %s |\n|%s|\n", strings.Join(head, " | "), strings.Join(sep, "|"))
		for _, r := range t.Rows {
			cells := make([]string, len(r))
			for i, v := range r {
				cells[i] = mdEscape(cell(v, t.Columns[i].Prec))
				if cells[i] == "" {
					cells[i] = "-"
				}
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
		}
		if len(t.Lines) > 0 {
			fmt.Fprintln(w)
			for _, l := range t.Lines {
				fmt.Fprintf(w, "- %s\n", mdEscape(l))
			}
		}
		return nil
	}
}

// mdEscape keeps a cell from breaking its table (a pipe ends a cell).
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// cell prints one value: numbers with prec decimals (-1: as many as it
// takes), NaN and infinities blank.
func cell(v any, prec int) string {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return ""
		}
		if prec < 0 {
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
		return strconv.FormatFloat(x, 'f', prec, 64)
	case *float64:
		if x == nil {
			return ""
		}
		return cell(*x, prec)
	case int:
		return strconv.Itoa(x)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// dist is a distribution's p50, p90, p99 (blank when empty).
func dist(d stats.Dist) []any {
	if d.N == 0 {
		nan := math.NaN()
		return []any{nan, nan, nan}
	}
	return []any{d.P50, d.P90, d.P99}
}

func pcts(name, unit string, prec int) []Column {
	return []Column{{name + " p50", unit, prec}, {name + " p90", unit, prec}, {name + " p99", unit, prec}}
}

func tableOf(result any) (*Table, error) {
	switch r := result.(type) {
	case *analyze.Run:
		return runTable(r), nil
	case *analyze.Comparison:
		return compareTable(r), nil
	case *analyze.BaselineComparison:
		return baselineTable(r), nil
	case *analyze.Overhead:
		return overheadTable(r), nil
	case *check.Result:
		return checkTable(r), nil
	case *analyze.Selftest:
		return selftestTable(r), nil
	case *analyze.Experiment:
		return experimentTable(r), nil
	case *analyze.Twin:
		return twinTable(r), nil
	case *analyze.Explanation:
		return explainTable(r), nil
	}
	return nil, unknownModel(result)
}

func runTable(r *analyze.Run) *Table {
	t := &Table{Title: strings.ReplaceAll(Describe(r.Setup), "\n", "; ")}
	t.Columns = []Column{{"stage", "", -1}, {"concurrency", "", 0}, {"rate", "req/s", 2}, {"requests", "", 0}, {"ok", "", 0}, {"errors", "", 0},
		{"aggregate", "tok/s", 1}, {"steady", "tok/s", 1}, {"request mean", "tok/s", 1}, {"decode mean", "tok/s", 1}}
	t.Columns = append(t.Columns, pcts("TTFT", "ms", 1)...)
	t.Columns = append(t.Columns, pcts("TPOT", "ms", 2)...)
	t.Columns = append(t.Columns, pcts("ITL", "ms", 2)...)
	t.Columns = append(t.Columns, pcts("E2E", "ms", 0)...)
	t.Columns = append(t.Columns, Column{"output", "tokens", 0}, Column{"wall", "s", 1}, Column{"throughput", "req/s", 2}, Column{"effective concurrency", "", 1})
	costCols, costCells := costColumns(r)
	t.Columns = append(t.Columns, costCols...)
	for i := range r.Stages {
		s := &r.Stages[i]
		errs := s.Requests - s.OK - s.Cancelled
		src := r.Source // figures another tool's file lacks are blank
		var conc, rate any = s.Concurrency, s.Rate
		if src != nil && s.Concurrency == 0 {
			conc = math.NaN() // the file states no concurrency
		}
		if src != nil && s.Rate == 0 {
			rate = math.NaN()
		}
		row := []any{analyze.Label(s.Stage), conc, rate, s.Requests, s.OK, tableBlank(src, "errors", float64(errs)),
			tableBlank(src, "aggregate_tok_s", s.AggregateTokS), tableBlank(src, "steady_tok_s", s.SteadyTokS), nanIfEmpty(s.RequestTokS), nanIfEmpty(s.DecodeTokS)}
		row = append(row, dist(s.TTFT)...)
		row = append(row, dist(s.TPOT)...)
		row = append(row, dist(s.ITL)...)
		row = append(row, dist(s.E2E)...)
		row = append(row, tableBlank(src, "output_tokens", float64(s.OutputTokens)), tableBlank(src, "wall_s", s.WallS),
			tableBlank(src, "requests_per_s", s.RequestsPerS), tableBlank(src, "effective_concurrency", s.EffectiveConcurrency))
		t.Rows = append(t.Rows, append(row, costCells(s)...))
		t.Lines = append(t.Lines, CostLines(s)...)
	}
	if r.Source != nil {
		t.Title = strings.ReplaceAll(DescribeSource(r), "\n", "; ")
		t.Lines = append(t.Lines, SourceLines(r.Source)...)
	}
	for _, w := range r.Warnings {
		t.Lines = append(t.Lines, "warning: "+w.String())
	}
	if r.Verdict != nil {
		t.Lines = append(t.Lines, "verdict: "+r.Verdict.Text)
	}
	t.Lines = append(t.Lines, RepeatLines(r)...)
	return t
}

func nanIfEmpty(d stats.Dist) float64 {
	if d.N == 0 {
		return math.NaN()
	}
	return d.Mean
}

func compareTable(c *analyze.Comparison) *Table {
	t := &Table{Title: "B / A (A = " + c.Files[0] + ")"}
	t.Columns = []Column{{"B", "", -1}, {"stage", "", -1}, {"metric", "", -1}, {"A", "", 1}, {"B value", "", 1}, {"ratio", "", 3}, {"ratio lo95", "", 3}, {"ratio hi95", "", 3}, {"p", "", 3}, {"significant", "", -1}, {"resolves", "", 3}}
	for _, st := range c.Stages {
		for bi, ms := range st.Metrics {
			for _, m := range ms {
				t.Rows = append(t.Rows, []any{c.Files[bi+1], st.Label, m.Name, m.A, m.B, m.Ratio, m.Lo, m.Hi, m.P, m.Significant, m.Resolves})
			}
		}
	}
	for _, n := range c.Withheld() {
		t.Lines = append(t.Lines, analyze.NotJudged(n))
	}
	for _, f := range c.Fairness {
		t.Lines = append(t.Lines, "setup of "+f.B+": "+f.Verdict)
	}
	for _, f := range c.Energy {
		t.Rows = append(t.Rows, []any{f.B, f.Stage, f.Name, f.A, f.BV, orNaN(f.Ratio), math.NaN(), math.NaN(), math.NaN(), "", math.NaN()})
		t.Lines = append(t.Lines, EnergyLine(f))
	}
	return t
}

func baselineTable(c *analyze.BaselineComparison) *Table {
	t := &Table{Title: c.Run.Name + " against baseline " + c.Baseline.Name}
	t.Columns = []Column{{"concurrency", "", 0}, {"run", "tok/s", 1}, {"baseline", "tok/s", 1}, {"ratio", "", 2}, {"run per GPU", "tok/s", 1}, {"baseline per GPU", "tok/s", 1}, {"per GPU ratio", "", 2}}
	for _, r := range c.Ratios {
		row := []any{r.C, r.Run, r.Base, r.Ratio, math.NaN(), math.NaN(), math.NaN()}
		if r.PerGPU {
			row[4], row[5], row[6] = r.RunGPU, r.BaseGPU, r.GPURatio
		}
		t.Rows = append(t.Rows, row)
	}
	if !c.Basis.Judged() {
		t.Lines = append(t.Lines, "ratios "+analyze.NotJudged(c.Basis.Withheld))
	}
	t.Lines = append(t.Lines, "verdict: "+c.Verdict)
	if c.Claim != "" {
		t.Lines = append(t.Lines, "claim: "+c.Claim)
	}
	return t
}

func overheadTable(o *analyze.Overhead) *Table {
	t := &Table{Title: "chat " + o.ChatRoute + " against raw " + o.RawRoute + " on " + Short(o.Setup)}
	t.Columns = []Column{{"concurrency", "", 0}, {"TTFT raw", "ms", 1}, {"TTFT chat", "ms", 1}, {"TTFT diff", "ms", 1}, {"TTFT diff half95", "ms", 1},
		{"TPOT raw", "ms", 2}, {"TPOT chat", "ms", 2}, {"TPOT diff", "ms", 2}, {"TPOT diff half95", "ms", 2},
		{"decode raw", "tok/s", 1}, {"decode chat", "tok/s", 1}, {"aggregate raw", "tok/s", 1}, {"aggregate chat", "tok/s", 1}, {"prompt raw", "tokens", 0}, {"prompt chat", "tokens", 0}}
	for _, l := range o.Levels {
		t.Rows = append(t.Rows, []any{l.C, l.Raw.TTFT.Mean, l.Chat.TTFT.Mean, l.TTFT.Value, l.TTFT.HalfWidth, l.Raw.TPOT.Mean, l.Chat.TPOT.Mean, l.TPOT.Value, l.TPOT.HalfWidth,
			l.Raw.DecodeTokS.Mean, l.Chat.DecodeTokS.Mean, l.RawAggTokS, l.ChatAggTokS, l.PromptRaw, l.PromptChat})
		t.Lines = append(t.Lines, "reading: "+l.Reading)
	}
	return t
}

func checkTable(r *check.Result) *Table {
	t := &Table{Title: "check of " + Short(r.Setup)}
	t.Columns = []Column{{"check", "", -1}, {"passed", "", -1}, {"right", "", 0}, {"total", "", 0}, {"share", "", 3}, {"detail", "", -1}}
	for _, s := range r.Sensible {
		t.Rows = append(t.Rows, []any{"sensible output", len(s.Problems) == 0, nil, nil, nil, s.Prompt + ": " + strings.Join(s.Problems, "; ")})
	}
	if d := r.Determinism; d != nil {
		t.Rows = append(t.Rows, []any{"greedy determinism", d.Same, nil, nil, nil, d.Failed})
	}
	if a := r.Accuracy; a != nil {
		t.Rows = append(t.Rows, []any{"accuracy", a.Passed, a.Right, a.Total, a.Share, fmt.Sprintf("95%% interval %.3f–%.3f, threshold %.2f", a.Lo, a.Hi, a.Threshold)})
	}
	if tc := r.ToolCalls; tc != nil {
		var passed any = tc.Passed()
		if tc.NotJudged != "" {
			passed = nil
		}
		t.Rows = append(t.Rows, []any{"tool calls", passed, nil, len(tc.Calls), nil, tc.NotJudged + strings.Join(tc.Problems, "; ")})
	}
	if a := r.Agreement; a != nil {
		t.Rows = append(t.Rows, []any{"agreement", nil, a.Same, a.Total, float64(a.Same) / float64(a.Total), a.FirstDiff})
	}
	t.Lines = append(t.Lines, fmt.Sprintf("verdict: passed %v", r.Passed))
	return t
}

func selftestTable(s *analyze.Selftest) *Table {
	t := &Table{Title: "selftest"}
	t.Columns = []Column{{"streams", "", 0}, {"offered", "tok/s", 0}, {"received", "tok/s", 0}, {"CPU per chunk", "µs", 1}, {"bare reader per chunk", "µs", 1},
		{"memory", "MB", 0}, {"buffered share", "", 3}, {"TTFT err", "", 4}, {"ITL p50 err", "", 4}, {"aggregate err", "", 4}, {"errors", "", 0}}
	for _, l := range s.Levels {
		bare := math.NaN()
		if l.BareChunks > 0 {
			bare = float64(l.BareCPU.Microseconds()) / float64(l.BareChunks)
		}
		errs := []any{l.TTFTErr, l.ITLErr, l.AggErr}
		if !l.Compared {
			errs = []any{math.NaN(), math.NaN(), math.NaN()}
		}
		row := []any{l.Streams, l.OfferedTokS, l.ReceivedTokS, l.PerChunk(), bare, l.RSSMB, l.BufferedShare}
		t.Rows = append(t.Rows, append(append(row, errs...), l.Errors))
	}
	t.Lines = append(t.Lines, fmt.Sprintf("accurate up to %d streams", s.AccurateUpTo))
	return t
}

func experimentTable(e *analyze.Experiment) *Table {
	t := &Table{Title: "experiment"}
	t.Columns = []Column{{"concurrency", "", 0}, {"config", "", -1}, {"aggregate", "tok/s", 1}, {"ratio", "", 2}, {"significant", "", -1}, {"resolves", "", 3}, {"failed", "", -1}}
	for _, lv := range e.Levels {
		for i, c := range lv.Cells {
			t.Rows = append(t.Rows, []any{lv.C, e.Configs[i].Name, c.AggregateTokS, c.Ratio, c.Significant, c.Resolves, c.Failed})
		}
	}
	for _, c := range e.Configs {
		if !c.OK {
			t.Lines = append(t.Lines, c.Name+": failed — "+c.Reason)
			continue
		}
		for _, l := range experimentConfigLines(e, c) {
			t.Lines = append(t.Lines, c.Name+": "+l)
		}
	}
	if v := e.Verdicts; v != nil {
		for _, x := range v.All() {
			t.Lines = append(t.Lines, x.Line())
		}
	}
	return t
}
