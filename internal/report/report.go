// Package report renders tokperf's result models for people and programs,
// through one registry of formats: text (the human report, its tables
// Markdown-compatible), json (every figure, warning and verdict, with a
// versioned schema), csv (one row per stage, one number per cell, units in
// the column names), markdown (GitHub tables and lists), html (one
// self-contained page of SVG charts: chart.go, html.go) and png (one of
// those charts as an image: png.go). Every command that prints results
// takes --format and renders through Render.
//
//	report.Render(os.Stdout, "json", run) // run is an *analyze.Run
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/check"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
	"github.com/tokperf/tokperf/internal/term"
)

// Reporter writes one rendering of a result.
type Reporter func(io.Writer) error

// formats maps a --format name to the constructor of its reporter over a
// result model (*analyze.Run, *analyze.Comparison, *analyze.BaselineComparison,
// *analyze.Overhead, *analyze.Experiment, *analyze.Selftest, *check.Result).
var formats = map[string]func(result any) (Reporter, error){
	"text":     textReporter,
	"json":     jsonReporter,
	"csv":      csvReporter,
	"markdown": markdownReporter,
	"html":     htmlReporter,
	"png":      pngReporter,
}

// Formats lists the format names, sorted.
func Formats() []string {
	var out []string
	for k := range formats {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Known says whether name is a format.
func Known(name string) bool { _, ok := formats[name]; return ok }

// Render writes result in the named format.
func Render(w io.Writer, format string, result any) error {
	make, ok := formats[format]
	if !ok {
		return fmt.Errorf("unknown format %q (want %s)", format, strings.Join(Formats(), ", "))
	}
	if p, ok := result.(Pick); ok && format != "png" {
		result = p.Result // one chart is the png format's choice
	}
	rep, err := make(result)
	if err != nil {
		return err
	}
	if format == "png" {
		w = term.Raw(w) // bytes, not text
	}
	return rep(w)
}

func unknownModel(result any) error { return fmt.Errorf("report: no renderer for %T", result) }

// jsonReporter writes the model as indented JSON: models carry their
// schema name and version, units in the field names.
func jsonReporter(result any) (Reporter, error) {
	return func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(result)
	}, nil
}

// textReporter is the human report of each model.
func textReporter(result any) (Reporter, error) {
	switch r := result.(type) {
	case *analyze.Run:
		return func(w io.Writer) error { Text(w, r); return nil }, nil
	case *analyze.Comparison:
		return func(w io.Writer) error { Pairs(w, r); return nil }, nil
	case *analyze.BaselineComparison:
		return func(w io.Writer) error { Baseline(w, r); return nil }, nil
	case *analyze.Overhead:
		return func(w io.Writer) error { OverheadText(w, r); return nil }, nil
	case *check.Result:
		return func(w io.Writer) error { CheckText(w, r); return nil }, nil
	case *analyze.Selftest:
		return func(w io.Writer) error { SelftestText(w, r); return nil }, nil
	case *analyze.Experiment:
		return func(w io.Writer) error { ExperimentText(w, r); return nil }, nil
	case *analyze.Twin:
		return func(w io.Writer) error { TwinText(w, r); return nil }, nil
	case *analyze.Explanation:
		return func(w io.Writer) error { ExplainText(w, r); return nil }, nil
	}
	return nil, unknownModel(result)
}

// DefaultPercentiles are the percentiles the headline table shows.
var DefaultPercentiles = []float64{50, 99}

// columns are the headline table's column names for percentiles ps, its
// first named for open-loop stages when open.
func columns(ps []float64, open bool) []string {
	first := "C"
	if open {
		first = "rate"
	}
	var names []string
	for _, p := range ps {
		names = append(names, pname(p))
	}
	pct := strings.Join(names, "/")
	return []string{first, "aggregate tok/s", "req/s", "request tok/s", "decode tok/s", "TTFT " + pct + " ms", "TPOT " + pct + " ms",
		"ITL " + pct + " ms", "E2E " + pct + " s", "n", "tokens", "wall s", "errors"}
}

// pname is a percentile's name: p50, p99.9, max.
func pname(p float64) string {
	if p >= 100 {
		return "max"
	}
	return "p" + strconv.FormatFloat(p, 'g', -1, 64)
}

func num(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, v)
}

// latency prints a pair of milliseconds with a precision that fits them.
func latency(a, b float64) string {
	return latencies([]float64{a, b}, nil)
}

// latencies prints percentiles with one precision that fits the largest,
// each marked † where too few[i].
func latencies(vs []float64, few []bool) string {
	hi := 0.0
	for _, v := range vs {
		if !math.IsNaN(v) {
			hi = math.Max(hi, v)
		}
	}
	prec := 1
	if hi >= 100 {
		prec = 0
	} else if hi < 10 {
		prec = 2
	}
	var out []string
	for i, v := range vs {
		c := num(v, prec)
		if i < len(few) && few[i] && c != "-" {
			c += "†"
		}
		out = append(out, c)
	}
	return strings.Join(out, " / ")
}

// pcell is d's percentiles ps, in unit scale, each marked when d has too
// few samples for it.
func pcell(d stats.Dist, ps []float64, scale float64) string {
	vs, few := make([]float64, len(ps)), make([]bool, len(ps))
	for i, p := range ps {
		v, _ := d.Percentile(p)
		vs[i], few[i] = v*scale, !stats.Enough(d.N, p)
	}
	if d.N == 0 {
		for i := range vs {
			vs[i] = math.NaN()
		}
	}
	return latencies(vs, few)
}

// Rows are the table's cells, one row per stage, for percentiles ps.
func Rows(stages []summary.Stage, ps []float64) [][]string {
	var rows [][]string
	for _, s := range stages {
		label := fmt.Sprint(s.Concurrency)
		if s.Concurrency == 0 && s.Rate == 0 {
			label = "?" // another tool's file that states no load
		}
		if s.Rate > 0 {
			label = fmt.Sprintf("%g/s", s.Rate)
			if s.Concurrency > 0 {
				label += fmt.Sprintf(" (≤%d)", s.Concurrency)
			}
		}
		if s.Repeat > 0 {
			label += fmt.Sprintf(" #%d", s.Repeat+1)
		}
		errs := 0
		for _, n := range s.Errors {
			errs += n
		}
		errCell := fmt.Sprint(errs)
		if s.Cancelled > 0 {
			errCell += fmt.Sprintf(" (+%d cancelled)", s.Cancelled)
		}
		rows = append(rows, []string{
			label,
			num(s.AggregateTokS, 1),
			num(s.RequestsPerS, 2),
			num(s.RequestTokS.Mean, 1),
			num(s.DecodeTokS.Mean, 1),
			pcell(s.TTFT, ps, 1),
			pcell(s.TPOT, ps, 1),
			pcell(s.ITL, ps, 1),
			pcell(s.E2E, ps, 0.001),
			fmt.Sprint(s.TTFT.N),
			fmt.Sprint(s.OutputTokens),
			num(s.WallS, 1),
			errCell,
		})
	}
	return rows
}

// Headline writes the headline table with aligned columns, percentiles ps
// (nil: DefaultPercentiles), every column when wide, else the compact
// layout.
func Headline(w io.Writer, stages []summary.Stage, ps []float64, wide bool) {
	if len(ps) == 0 {
		ps = DefaultPercentiles
	}
	headline(w, stages, Rows(stages, ps), ps, wide)
}

// compactColumns are the columns of the compact headline (by their index
// in columns' list) and their shorter names: the load, aggregate and
// decode tok/s, TTFT, ITL and E2E, the requests behind them and errors;
// with the default percentiles it fits 100 columns of a terminal.
var compactColumns = []struct {
	at   int
	name string // "" keeps the full name
}{{0, ""}, {1, "agg tok/s"}, {4, "dec tok/s"}, {5, ""}, {7, ""}, {8, ""}, {9, ""}, {12, "err"}}

// CompactNote says what the compact headline leaves out.
const CompactNote = "agg = aggregate, dec = decode; --wide shows every column (req/s, request tok/s, TPOT, tokens, wall)"

func headline(w io.Writer, stages []summary.Stage, rows [][]string, ps []float64, wide bool) {
	open := len(stages) > 0
	for _, s := range stages {
		open = open && s.Rate > 0
	}
	cols := columns(ps, open)
	if wide {
		aligned(w, cols, rows, 3)
		return
	}
	names := make([]string, len(compactColumns))
	for i, c := range compactColumns {
		names[i] = cols[c.at]
		if c.name != "" {
			names[i] = c.name
		}
	}
	picked := make([][]string, len(rows))
	for r, row := range rows {
		for _, c := range compactColumns {
			picked[r] = append(picked[r], row[c.at])
		}
	}
	aligned(w, names, picked, 3)
}

// fewNote says what † means, for the percentiles shown, or "" when no
// cell is marked.
func fewNote(stages []summary.Stage, ps []float64) string {
	if len(ps) == 0 {
		ps = DefaultPercentiles
	}
	marked := false
	for _, s := range stages {
		for _, p := range ps {
			for _, d := range []stats.Dist{s.TTFT, s.TPOT, s.ITL, s.E2E} {
				marked = marked || (d.N > 0 && !stats.Enough(d.N, p))
			}
		}
	}
	if !marked {
		return ""
	}
	var need []string
	for _, p := range ps {
		if p < 100 && p > 50 {
			need = append(need, fmt.Sprintf("%s needs %.0f", pname(p), math.Round(1/(1-p/100))))
		}
	}
	return "† = fewer samples than the percentile needs to be more than the largest value (" + strings.Join(need, ", ") + "); ask for more with --requests or --duration"
}

// Describe is the one-line description of what was measured.
func Describe(s record.Setup) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s on %s", s.Server.Engine, s.Route, s.URL)
	if s.Simulated {
		fmt.Fprintf(&b, " (embedded simulator, profile %s%s)", s.Profile, virtualNote(s))
	}
	if t := s.TLS; t != nil {
		fmt.Fprintf(&b, " over %s (%s", t.Version, t.Proto)
		if t.ALPN != "" {
			fmt.Fprintf(&b, ", ALPN %s", t.ALPN)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ", model %s", s.Model)
	eos := "EOS honoured"
	if s.Workload.IgnoreEOS {
		eos = "ignore_eos"
		if !analyze.TakesIgnoreEOS(s.Server.Engine) {
			eos = "EOS honoured (" + s.Server.Engine + " has no ignore_eos)"
		}
	}
	in, out := fmt.Sprint(s.Workload.InputTokens), fmt.Sprint(s.Workload.OutputTokens)
	if s.Workload.Input != "" {
		in = s.Workload.Input
	}
	if s.Workload.Output != "" {
		out = s.Workload.Output
	}
	prompts := in + "-token prompts"
	if s.Workload.Tokenizer == "" && !(s.Simulated && s.Workload.Prompts == "") {
		// Without a tokenizer a length is a guess from the text; only the
		// fixed word list on the simulator is one word a token exactly.
		prompts = "~" + in + "-token prompts (estimated: no tokenizer)"
	}
	switch in {
	case "dataset":
		prompts = "the dataset's prompts"
	case "trace":
		prompts = "the trace's prompts at its timestamps"
	case "agent trace":
		prompts = "the agent trace's prompts, turn by turn"
	}
	outputs := "up to " + out + " output tokens"
	switch out {
	case "dataset":
		outputs = "output tokens as the dataset asks"
	case "trace", "agent trace":
		outputs = "output tokens as the trace asks"
	}
	fmt.Fprintf(&b, "\nworkload: %s, %s, %s, temperature %g", prompts, outputs, eos, s.Sampling.Temperature)
	if s.Workload.Prompts != "" {
		fmt.Fprintf(&b, "\nprompts: %s", s.Workload.Prompts)
	}
	if s.Preset != nil {
		b.WriteString("\n" + PresetLine(s.Preset))
	}
	switch s.CachePrompt {
	case "conversations":
		b.WriteString("\ncache_prompt on: llama.cpp reuses its prompt cache from turn to turn, as conversations measure it (--cache-prompt=false for a cold prefill)")
	case "asked":
		b.WriteString("\ncache_prompt on (--cache-prompt): llama.cpp reuses its prompt cache, so TTFT leaves out the prefill of what it kept")
	}
	return b.String()
}

// ServerLine sets the server's own timing of the stage's requests beside
// the client's, with the difference; empty when the server reports none.
func ServerLine(s summary.Stage) string {
	var parts []string
	if d := s.ServerDecodeTokS; d.N > 0 && s.ServerCompute == 0 {
		parts = append(parts, fmt.Sprintf("decode %.1f tok/s vs the client's %.1f (%+.1f%%)", d.Mean, s.DecodeTokS.Mean, 100*(s.DecodeTokS.Mean/d.Mean-1)))
	} else if d.N > 0 {
		// Compute time alone is faster than the stream by the time between
		// steps: named, not set against the client's as if it disagreed.
		parts = append(parts, fmt.Sprintf("decode %.1f tok/s of engine compute (its eval_duration leaves out the time between steps; the client's %.1f includes it)", d.Mean, s.DecodeTokS.Mean))
	}
	if d := s.ServerE2E; d.N > 0 {
		parts = append(parts, fmt.Sprintf("E2E %.0f ms vs the client's %.0f (%+.1f ms)", d.Mean, s.E2E.Mean, s.E2E.Mean-d.Mean))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s: the server reports %s, for %s", analyze.Label(s), strings.Join(parts, "; "), record.Plural(s.ServerTimed, "request"))
}

// Notes say what a run's file lacks: a cut last line, no end line, an
// interrupt (empty for a whole file).
func Notes(r *analyze.Run) []string {
	var out []string
	if r.Integrity.Truncated {
		out = append(out, fmt.Sprintf("note: the last line of %s was cut short (the run crashed or was killed mid-write); it was skipped", r.File))
	}
	if n := r.Integrity.Duplicates; n > 0 {
		out = append(out, fmt.Sprintf("note: %d request lines of %s repeat the id of one before them (corrupted or concatenated); they were skipped, the first of each kept", n, r.File))
	}
	if !r.Integrity.Ended {
		out = append(out, fmt.Sprintf("note: %s has no end line: the run did not finish cleanly; %s kept", r.File, record.Plural(r.Integrity.Records, "finished request")))
	} else if r.Integrity.Interrupted {
		out = append(out, fmt.Sprintf("note: the run in %s was interrupted; %s kept", r.File, record.Plural(r.Integrity.Records, "finished request")))
	}
	return out
}

// Text writes the full human report of a run: notes on the file, what was
// measured, the table, the definitions used, the server's and the GPUs'
// readings, the warnings and the verdict.
func Text(w io.Writer, r *analyze.Run) {
	for _, n := range Notes(r) {
		fmt.Fprintln(w, n)
	}
	if r.Source != nil {
		fmt.Fprintln(w, DescribeSource(r))
	} else {
		fmt.Fprintln(w, Describe(r.Setup))
	}
	fmt.Fprintln(w)
	stages := r.Figures()
	ps := textTable(w, r, stages)
	definitions(w, r.Source, stages, ps)
	goodput(w, r.Setup.SLO, stages)
	for _, s := range stages {
		stageNotes(w, s)
	}
	readings(w, r, stages)
	judgements(w, r.Warnings, r.Verdict)
	Capacity(w, r.Capacity)
	for _, l := range ShapeLines(r) {
		fmt.Fprintln(w, l)
	}
	TwinChecked(w, r.Twin)
}

// textTable writes the table of the stages' figures, and returns the
// percentiles it shows.
func textTable(w io.Writer, r *analyze.Run, stages []summary.Stage) []float64 {
	ps := r.Percentiles
	if len(ps) == 0 {
		ps = DefaultPercentiles
	}
	rows := Rows(stages, ps)
	headlineBlank(rows, r.Source)
	headline(w, stages, rows, ps, r.Wide)
	fmt.Fprintln(w)
	if !r.Wide {
		fmt.Fprintln(w, CompactNote)
	}
	return ps
}

// definitions says how each figure of the table is defined: by tokperf,
// or by the tool whose file was read.
func definitions(w io.Writer, source *analyze.Source, stages []summary.Stage, ps []float64) {
	if source != nil {
		for _, s := range stages {
			if line := SourceStageLine(s, source); line != "" {
				fmt.Fprintln(w, line)
			}
		}
		for _, l := range SourceLines(source) {
			fmt.Fprintln(w, l)
		}
	} else {
		fmt.Fprintln(w, "aggregate = output tokens / stage wall time; req/s = requests finished per second; request and decode tok/s are means over requests;")
		fmt.Fprintln(w, "TTFT = first token - sent; TPOT = decode time / decode tokens; ITL = chunk gap / tokens in the chunk, per token; E2E = last token - sent (docs/METRICS.md).")
		fmt.Fprintln(w, "n = the requests behind the TTFT, TPOT and E2E percentiles (ITL's samples are the tokens).")
		if note := fewNote(stages, ps); note != "" {
			fmt.Fprintln(w, note)
		}
	}
}

// goodput writes the stages' goodput under the SLO, where one was set,
// and their steady-state throughput.
func goodput(w io.Writer, slo record.SLO, stages []summary.Stage) {
	var steady []string
	for _, s := range stages {
		if s.SteadyTokS > 0 {
			steady = append(steady, fmt.Sprintf("%s %.1f", analyze.Label(s), s.SteadyTokS))
		}
	}
	if slo.Set() {
		var parts, good []string
		if slo.TTFTMs > 0 {
			parts = append(parts, fmt.Sprintf("TTFT ≤ %g ms", slo.TTFTMs))
		}
		if slo.TPOTMs > 0 {
			parts = append(parts, fmt.Sprintf("TPOT ≤ %g ms", slo.TPOTMs))
		}
		if slo.E2EMs > 0 {
			parts = append(parts, fmt.Sprintf("E2E ≤ %g ms", slo.E2EMs))
		}
		for _, s := range stages {
			good = append(good, fmt.Sprintf("%s %.2f req/s, %.1f tok/s (%d of %d met)", analyze.Label(s), s.GoodputRequestsPerS, s.GoodputTokS, s.SLOMet, s.OK))
		}
		fmt.Fprintf(w, "goodput (%s): %s\n", strings.Join(parts, ", "), strings.Join(good, "; "))
	}
	if len(steady) > 0 {
		fmt.Fprintf(w, "steady state (tok/s while the target concurrency was in flight): %s\n", strings.Join(steady, ", "))
	}
}

// stageNotes are a stage's notes past the table: tokens per chunk, the
// prefix cache, reasoning, waits and retries.
func stageNotes(w io.Writer, s summary.Stage) {
	if s.TokensPerChunk > 1.05 {
		fmt.Fprintf(w, "%s: %.2f tokens per chunk (ICL p50 %.2f ms vs ITL p50 %.2f ms)\n", analyze.Label(s), s.TokensPerChunk, s.ICL.P50, s.ITL.P50)
	}
	if s.CoalescedShare > analyze.BufferedLimit {
		fmt.Fprintf(w, "%s: the server wrote %.0f%% of token chunks together with the one before (server-coalesced: they arrived in one read, read at once), so they share one arrival; ICL and ITL see its writes, not its steps\n", analyze.Label(s), 100*s.CoalescedShare)
	}
	// TTFT is the first token on any channel; where visible content
	// came later (reasoning), TTFO is what a reader waits for.
	if s.CachedTokens > 0 {
		fmt.Fprintf(w, "%s: the server served %d of %d prompt tokens (%.1f%%) from its prefix cache, by its usage counts\n", analyze.Label(s), s.CachedTokens, s.PromptTokens, 100*float64(s.CachedTokens)/float64(max(s.PromptTokens, 1)))
	}
	if s.ReasoningTokens > 0 {
		fmt.Fprintln(w, reasoningLine(s))
	} else if s.TTFO.N > 0 && s.TTFT.N > 0 && s.TTFO.P50 > 1.01*s.TTFT.P50 {
		fmt.Fprintf(w, "%s: the first visible content (TTFO) came after the first token: TTFO p50/p99 %s ms against TTFT %s ms (reasoning counted as output)\n", analyze.Label(s), latency(s.TTFO.P50, s.TTFO.P99), latency(s.TTFT.P50, s.TTFT.P99))
	}
	if s.ToolCalled > 0 {
		fmt.Fprintln(w, toolLine(s))
	}
	switch {
	case s.RetryAfter > 0:
		fmt.Fprintf(w, "%s: %d answers asked the client to wait (Retry-After); the slots waited %.1f s in all before re-sending (outside TTFT and the client's queue)\n", analyze.Label(s), s.RetryAfter, s.BackoffS)
	case s.BackoffS > 0:
		// No answer asked for it: the runner backed off after failures.
		fmt.Fprintf(w, "%s: the slots backed off %.1f s in all after requests that failed, before re-sending (outside TTFT and the client's queue)\n", analyze.Label(s), s.BackoffS)
	}
	if s.LateMs > 0 {
		fmt.Fprintf(w, "%s: %d of %d sends were late, more than %.2f ms behind schedule (the late threshold: %.0f ms past this machine's timer oversleep); the client is called late from %d late sends and more than %.0f%% of them\n", analyze.Label(s), s.Late, s.Requests, s.LateMs, record.Ms(summary.LateThreshold), analyze.LateMin, 100*analyze.LateShareLimit)
	}
	if s.NoKeepAlive > 0 {
		fmt.Fprintf(w, "%s: the server closes every connection after a response without saying so (llama-server does): learned from the first kept-alive connections it had closed, %s then sent on a new connection each; its setup is in connect time, not in TTFT or the client's wait\n", analyze.Label(s), record.Plural(s.NoKeepAlive, "request")+record.WereWas(s.NoKeepAlive))
	}
	if s.Retries > 0 {
		fmt.Fprintf(w, "%s: %s sent again on a new connection after a kept-alive one failed before any response (the server closes connections it kept alive); the new connection's setup is in connect time, not in TTFT or the client's wait\n", analyze.Label(s), record.Plural(s.Retries, "request")+record.WereWas(s.Retries))
	}
}

// readings writes the server's, the GPUs' and the host's readings, the
// slices, repeats and shards.
func readings(w io.Writer, r *analyze.Run, stages []summary.Stage) {
	for _, s := range stages {
		if line := ServerLine(s); line != "" {
			fmt.Fprintln(w, line)
		}
		if line := SplitLine(s); line != "" {
			fmt.Fprintln(w, line)
		}
	}
	Turns(w, stages)
	Sessions(w, stages, r.Setup.Workload.CacheCeiling)
	for _, s := range r.Stages {
		if s.Server != nil {
			fmt.Fprintln(w, ServerReadingLine(s.Stage, s.Server))
		}
		if line := SpecLine(r, &s); line != "" {
			fmt.Fprintln(w, line)
		}
		if s.GPU != nil {
			fmt.Fprintln(w, GPULine(s.Stage, s.GPU))
		}
		for _, l := range CostLines(&s) {
			fmt.Fprintln(w, l)
		}
		if s.Host != nil {
			fmt.Fprintln(w, HostLine(s.Stage, s.Host))
		}
	}
	for _, s := range r.Stages {
		Slices(w, s)
	}
	for _, l := range RepeatLines(r) {
		fmt.Fprintln(w, l)
	}
	Shards(w, r)
}

// judgements writes the warnings and the scaling verdict.
func judgements(w io.Writer, warnings []analyze.Warning, verdict *analyze.ScalingVerdict) {
	for _, wn := range warnings {
		if wn.Check == "stability" {
			continue // the slices' own verdict says it, above
		}
		fmt.Fprintln(w, "warning: "+wn.String())
	}
	if verdict != nil {
		for _, step := range verdict.Steps {
			fmt.Fprintln(w, "scaling: "+step.Text)
		}
		fmt.Fprintln(w, "verdict: "+verdict.Text)
		if b := verdict.Basis; b != nil && b.Detail != "" {
			fmt.Fprintln(w, "withheld for: "+b.Detail)
		}
	}
}

// HostLine is what the client's machine did over a stage: "C=8: host:
// tokperf waited 12.0% of its CPU time for a CPU, CPU pressure 40% of the
// time, no steal, 0 TCP segments resent by its connections".
func HostLine(s summary.Stage, h *record.Host) string {
	var parts []string
	if h.Has("schedstat") {
		parts = append(parts, fmt.Sprintf("tokperf waited %.1f%% of its CPU time for a CPU", 100*h.WaitShare()))
	}
	if h.Has("pressure") {
		parts = append(parts, fmt.Sprintf("CPU pressure %.0f%% of the time", 100*h.PressureShare()))
	}
	if h.Has("stat") {
		parts = append(parts, fmt.Sprintf("steal %.1f%%", 100*h.Steal))
	}
	if h.Has("tcp_info") {
		parts = append(parts, fmt.Sprintf("%d TCP segments resent by its connections", h.Retrans))
	}
	if len(parts) == 0 {
		parts = append(parts, "not read")
	}
	return fmt.Sprintf("%s: host: %s", analyze.Label(s), strings.Join(parts, ", "))
}

// ServerReadingLine is the one-line reading of a stage's /metrics.
func ServerReadingLine(s summary.Stage, r *analyze.ServerReading) string {
	var parts []string
	parts = append(parts, fmt.Sprintf("running ≤ %.0f, waiting ≤ %.0f", r.MaxRunning, r.MaxWaiting))
	if r.MaxKV != nil {
		parts = append(parts, fmt.Sprintf("KV cache ≤ %.2g%%", 100**r.MaxKV))
	}
	if r.SpecLength > 0 {
		sp := fmt.Sprintf("speculation accepts %.2f tokens per step", r.SpecLength)
		if r.SpecRate > 0 {
			sp += fmt.Sprintf(" (%.0f%% of drafts)", 100*r.SpecRate)
		}
		parts = append(parts, sp)
	}
	if r.CacheHitRate != nil {
		parts = append(parts, fmt.Sprintf("prefix cache hit rate %.1f%%", 100**r.CacheHitRate))
	}
	if d, ok := r.RateDiff(); ok {
		parts = append(parts, fmt.Sprintf("generated %.1f tok/s by its counters vs %.1f received (%+.1f%%, ±%.0f%% from the scrape interval)", *r.GeneratedTokS, *r.ReceivedTokS, 100*d, 100*r.RateUncertainty))
	}
	return fmt.Sprintf("%s: server metrics (%d samples): %s", analyze.Label(s), r.Samples, strings.Join(parts, "; "))
}

// GPULine is the one-line reading of a stage's GPUs: memory, utilization,
// power, and the energy per token.
func GPULine(s summary.Stage, g *analyze.GPUReading) string {
	line := fmt.Sprintf("%s: GPUs %d × %s: memory ≤ %.1f GiB, utilization %.0f%%, power %.0f W, %.0f J", analyze.Label(s), g.GPUs, g.Names[0], g.MaxMemMiB/1024, g.UtilPct, g.PowerW, g.EnergyJ)
	if g.GPUs > 1 && len(g.PerGPUW) > 0 {
		var per []string
		for _, p := range g.PerGPUW {
			per = append(per, fmt.Sprintf("%.0f W", p))
		}
		line += " (per GPU " + strings.Join(per, ", ") + ")"
	}
	if g.JPer1000Tokens > 0 {
		line += fmt.Sprintf(": %.1f J per 1000 tokens, %.2f tokens per joule", g.JPer1000Tokens, g.TokensPerJ)
	}
	return line
}
