package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// Runs is several result files rendered together: report FILE... in the
// html and png formats sets their curves on the same charts.
type Runs []*analyze.Run

// named is one run with the name its curves carry.
type named struct {
	name string
	run  *analyze.Run
}

// page is what one html page or png image holds, from any model.
type page struct {
	title    string
	runs     []named
	baseline *analyze.BaselineComparison
	sections []string // rendered HTML of the model's own tables
	twin     *analyze.Twin
	// summary is the page's own lead lines (a comparison's ratios), above
	// each run's verdict and key numbers.
	summary []string
	// sectionsFirst puts the model's own tables (an A/B, a baseline's
	// arithmetic) right after the summary, above the runs' headlines.
	sectionsFirst bool
	// experiment, when the page is one, adds its workloads', overhead's
	// and soak's charts.
	experiment *analyze.Experiment
}

func runName(r *analyze.Run, i int) string {
	if r.File != "" {
		return strings.TrimSuffix(filepath.Base(r.File), ".jsonl")
	}
	return fmt.Sprintf("run %d", i+1)
}

// pageOf gathers the runs behind a model and its own tables.
func pageOf(result any) (*page, error) {
	p := &page{}
	switch r := result.(type) {
	case *analyze.Run:
		p.title = "tokperf report"
		if r.File != "" {
			p.title += ": " + filepath.Base(r.File)
		}
		p.runs = []named{{runName(r, 0), r}}
	case Runs:
		p.title = "tokperf report of " + fmt.Sprint(len(r)) + " runs"
		for i, run := range r {
			p.runs = append(p.runs, named{runName(run, i), run})
		}
	case *analyze.Comparison:
		p.title = "tokperf compare: B / A (A = " + r.Files[0] + ")"
		for i, run := range r.Runs {
			p.runs = append(p.runs, named{runName(run, i), run})
		}
		p.sections = append(p.sections, pairsHTML(r)+speculationHTML(r.Speculation))
		p.summary, p.sectionsFirst = compareSummary(r), true
	case *analyze.BaselineComparison:
		p.title = "tokperf compare: " + r.Run.Name + " against " + r.Baseline.Name
		if r.Source != nil {
			p.runs = []named{{runName(r.Source, 0), r.Source}}
		}
		p.baseline, p.sectionsFirst = r, true
		p.sections = append(p.sections, baselineHTML(r))
	case *analyze.Experiment:
		p.title = "tokperf experiment"
		for _, c := range r.Configs {
			if c.Run != nil {
				p.runs = append(p.runs, named{c.Name, c.Run})
			}
		}
		if v := r.Verdicts; v != nil {
			// The answers lead the page, one short line each in its
			// summary box; their details follow it.
			var full []string
			for _, x := range v.All() {
				p.summary = append(p.summary, x.Short())
				full = append(full, "<li>"+text(x.Line())+"</li>")
			}
			p.sections = append(p.sections, "<h2>The "+number(len(full))+" verdicts in full</h2>\n<ul>\n"+strings.Join(full, "\n")+"\n</ul>")
			p.sectionsFirst = true
		}
		p.experiment = r
		var b strings.Builder
		ExperimentText(&b, r)
		p.sections = append(p.sections, "<h2>Configurations</h2>\n<pre>"+text(b.String())+"</pre>")
	case *analyze.Twin:
		p.title = "tokperf digital twin of " + filepath.Base(r.File)
		p.twin = r
		var b strings.Builder
		TwinText(&b, r)
		p.sections = append(p.sections, "<pre>"+text(b.String())+"</pre>")
	default:
		// A model with no curves (a check, a self-test, an overhead
		// comparison) is its text report on a page.
		rep, err := textReporter(result)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		rep(&b)
		p.title = "tokperf"
		p.sections = append(p.sections, "<pre>"+text(b.String())+"</pre>")
	}
	return p, nil
}

// charts are the page's charts across its runs, in page order; the
// per-stage ones come from stageCharts.
func (p *page) charts() []*chart {
	var out []*chart
	if c := twinChart(p.twin); c != nil {
		out = append(out, c)
	}
	if p.oneLevel() {
		out = append(out, p.distributions()...)
		if c := p.ttftSplit(); c != nil {
			out = append(out, c)
		}
		return out
	}
	if c := p.throughput(); c != nil {
		out = append(out, c)
	}
	out = append(out, p.latencies()...)
	if c := p.pareto(); c != nil {
		out = append(out, c)
	}
	if c := p.ttftSplit(); c != nil {
		out = append(out, c)
	}
	if p.experiment != nil {
		out = append(out, experimentCharts(p.experiment)...)
	}
	return out
}

// xOf places a stage on the x axis: its concurrency, or its rate in an
// open loop.
func xOf(r *analyze.Run, s summary.Stage) float64 {
	if r.OpenLoop {
		return s.Rate
	}
	return float64(s.Concurrency)
}

func (p *page) xLabel() (string, bool) {
	for _, n := range p.runs {
		if n.run.OpenLoop {
			return "offered rate (requests/s)", false
		}
	}
	return "concurrency (requests in flight, log scale)", true
}

func (p *page) throughput() *chart {
	xl, log := p.xLabel()
	c := &chart{Name: "throughput", Title: "Aggregate output tok/s against load", XLabel: xl, XLog: log, YLabel: "aggregate output tok/s", YZero: true}
	var notes []string
	sparse := false
	for i, n := range p.runs {
		se := series{Name: n.name, Color: hue(i), Line: true, Markers: true, Marker: markerOf(i)}
		for _, s := range n.run.Stages {
			se.Points = append(se.Points, point{X: xOf(n.run, s.Stage), Y: s.AggregateTokS, Tip: fmt.Sprintf("%s, %s: %s tok/s aggregate", n.name, analyze.Label(s.Stage), f1(s.AggregateTokS))})
		}
		if apart(se.Points) {
			se.Line, sparse = false, true
		}
		c.Series = append(c.Series, se)
		if v := n.run.Verdict; v != nil {
			if v.Knee > 0 {
				c.Marks = append(c.Marks, mark{X: float64(v.Knee), Label: fmt.Sprintf("knee C≈%d", v.Knee)})
			}
			notes = append(notes, prefix(len(p.runs), n.name)+"verdict: "+v.Text)
		}
	}
	if b := p.baseline; b != nil {
		se := series{Name: "baseline " + b.Baseline.Name, Color: "#555555", Markers: true, Line: true, Dash: "5 4", Marker: "diamond"}
		for _, pt := range b.Baseline.Points {
			tok := pt.AggregateTokS
			if b.Baseline.PerGPU && b.Baseline.GPUs > 0 {
				tok *= float64(b.Baseline.GPUs)
			}
			se.Points = append(se.Points, point{X: float64(pt.Concurrency), Y: tok, Tip: fmt.Sprintf("baseline, C=%d: %s tok/s aggregate", pt.Concurrency, f1(tok))})
		}
		c.Series = append(c.Series, se)
	}
	if len(c.Series) == 0 || points(c) == 0 {
		return nil
	}
	if sparse {
		notes = append(notes, apartNote)
	}
	c.Note = strings.Join(notes, " · ")
	return c
}

func prefix(n int, name string) string {
	if n > 1 {
		return name + ": "
	}
	return ""
}

func points(c *chart) int {
	n := 0
	for _, s := range c.Series {
		n += len(s.Points)
	}
	return n + len(c.Segments)
}

// latencies are TTFT, ITL and TPOT percentiles against load, one colour
// per run; the percentiles differ by dash (p50 solid, p90 dotted, p99
// dashed), by marker (circle, square, triangle) and by the label at the
// line's end.
func (p *page) latencies() []*chart {
	xl, log := p.xLabel()
	type metric struct {
		name, title, unit string
		dist              func(s *analyze.Stage) stats.Dist
		prec              int
	}
	ms := []metric{
		{"ttft", "Time to first token (TTFT) percentiles", "TTFT (ms)", func(s *analyze.Stage) stats.Dist { return s.TTFT }, 1},
		{"itl", "Inter-token latency (ITL) percentiles", "ITL (ms per token)", func(s *analyze.Stage) stats.Dist { return s.ITL }, 2},
		{"tpot", "Time per output token (TPOT) percentiles", "TPOT (ms per token)", func(s *analyze.Stage) stats.Dist { return s.TPOT }, 2},
	}
	var out []*chart
	for _, m := range ms {
		c := &chart{Name: m.name, Title: m.title, XLabel: xl, XLog: log, YLabel: m.unit, YZero: true}
		for i, n := range p.runs {
			for k, q := range []struct{ name, dash, marker string }{{"p50", "", "circle"}, {"p90", "2 3", "square"}, {"p99", "7 4", "triangle"}} {
				se := series{Name: strings.TrimSpace(prefix(len(p.runs), n.name) + q.name), Color: hue(i), Line: true, Markers: true, Dash: q.dash, Marker: q.marker, EndLabel: q.name}
				for si := range n.run.Stages {
					s := &n.run.Stages[si]
					d := m.dist(s)
					if d.N == 0 {
						continue
					}
					v := []float64{d.P50, d.P90, d.P99}[k]
					se.Points = append(se.Points, point{X: xOf(n.run, s.Stage), Y: v, Tip: fmt.Sprintf("%s, %s: %s %s %s ms", n.name, analyze.Label(s.Stage), strings.ToUpper(m.name), q.name, num(v, m.prec))})
				}
				if len(p.runs) > 1 && k == 1 {
					continue // two runs or more: p50 and p99 only, to stay readable
				}
				if apart(se.Points) {
					se.Line, c.Note = false, apartNote
				}
				c.Series = append(c.Series, se)
			}
		}
		if points(c) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// pareto is output tok/s per GPU against tok/s per user (each request's
// decode tok/s, mean), every stage of every run a point, the frontier
// (no other point better on both) ringed and joined.
func (p *page) pareto() *chart {
	c := &chart{Name: "pareto", Title: "Output tok/s per GPU against tok/s per user", XLabel: "tok/s per user (mean decode tok/s of a request)", YLabel: "output tok/s per GPU", YZero: true}
	var all []point
	var unknown []string
	for i, n := range p.runs {
		gpus := n.run.Setup.GPUs
		if gpus <= 0 {
			gpus = 1
			unknown = append(unknown, n.name)
		}
		se := series{Name: n.name, Color: hue(i), Markers: true, Line: true, Marker: markerOf(i)}
		for _, s := range n.run.Stages {
			if s.DecodeTokS.N == 0 {
				continue
			}
			se.PointLabels = append(se.PointLabels, analyze.Label(s.Stage))
			pt := point{X: s.DecodeTokS.Mean, Y: s.AggregateTokS / float64(gpus)}
			pt.Tip = fmt.Sprintf("%s, %s: %s tok/s per user, %s tok/s per GPU (%s over %d GPUs)", n.name, analyze.Label(s.Stage), f1(pt.X), f1(pt.Y), f1(s.AggregateTokS), gpus)
			se.Points = append(se.Points, pt)
			all = append(all, pt)
		}
		c.Series = append(c.Series, se)
	}
	if len(all) == 0 {
		return nil
	}
	on := pareto(all)
	k := 0
	for si := range c.Series {
		c.Series[si].Ring = on[k : k+len(c.Series[si].Points)]
		k += len(c.Series[si].Points)
	}
	c.Series = append(c.Series, series{Name: "Pareto frontier (ringed)", Color: "#111111", Line: true, Dash: "1 3", Points: frontierLine(all, on)})
	c.Note = "Up and to the right is better: a ringed point is on the frontier (no other point is better on both); each point is labelled with its level."
	if len(unknown) > 0 {
		c.Note += " The GPU count of " + strings.Join(unknown, ", ") + " is unknown: plotted as 1 GPU (the total)."
	}
	return c
}

// stageCharts are one stage's per-request timeline, token arrivals, and
// server and GPU readings over time, where the run has them.
func stageCharts(s *analyze.Stage) []*chart {
	var out []*chart
	label := analyze.Label(s.Stage)
	tl := s.Timeline
	// Times are from the stage's first send (its first scrape when the
	// stage has no timeline).
	var start time.Duration
	known := false
	if tl != nil && len(tl.Sample) > 0 {
		start, known = tl.From, true
		c := &chart{Name: "timeline", Title: "Requests over time, " + label, XLabel: "time since the stage's first send (s)", YLabel: "request (by send time)", YReverse: true}
		c.Series = []series{{Name: "sent → first token", Color: "#e69f00", Line: true}, {Name: "first token → end", Color: "#0072b2", Line: true}, {Name: "failed", Color: "#d55e00", Line: true}}
		for i, r := range tl.Sample {
			sent, done := secs(r.Sent, start), secs(r.Done, start)
			tip := fmt.Sprintf("request %d: sent %.3f s", r.ID, sent)
			if !r.OK {
				c.Segments = append(c.Segments, segment{X1: sent, X2: done, Y: float64(i), Color: "#d55e00", Tip: tip + fmt.Sprintf(", failed at %.3f s", done)})
				continue
			}
			if r.FirstToken == record.Unset {
				c.Segments = append(c.Segments, segment{X1: sent, X2: done, Y: float64(i), Color: "#e69f00", Tip: tip + fmt.Sprintf(", no token, ended %.3f s", done)})
				continue
			}
			first := secs(r.FirstToken, start)
			tip += fmt.Sprintf(", first token %.3f s (TTFT %.1f ms), end %.3f s, %d tokens", first, 1000*(first-sent), done, r.Tokens)
			c.Segments = append(c.Segments, segment{X1: sent, X2: first, Y: float64(i), Color: "#e69f00", Tip: tip}, segment{X1: first, X2: done, Y: float64(i), Color: "#0072b2", Tip: tip})
		}
		c.Note = fmt.Sprintf("All %s of the stage.", record.Plural(tl.Requests, "measured request"))
		if tl.Sampled() {
			c.Note = fmt.Sprintf("A sample of %d of the stage's %s, chosen by a hash of the request id (the same sample every time the file is read).", len(tl.Sample), record.Plural(tl.Requests, "measured request"))
		}
		out = append(out, c)
		a := &chart{Name: "arrivals", Title: "Token arrivals, " + label, XLabel: "time since the request was sent (s)", YLabel: "output tokens received", YZero: true}
		shown := 0
		for _, r := range tl.Sample {
			if r.Arrivals == nil {
				continue
			}
			se := series{Color: hue(shown), Line: true}
			for _, ar := range r.Arrivals {
				se.Points = append(se.Points, point{X: secs(ar.At, r.Sent), Y: float64(ar.Tokens)})
			}
			last := se.Points[len(se.Points)-1]
			se.Tip = fmt.Sprintf("request %d: %d tokens in %.3f s since it was sent, %d arrivals shown", r.ID, r.Tokens, last.X, len(r.Arrivals))
			a.Series = append(a.Series, se)
			shown++
		}
		a.Note = fmt.Sprintf("Each line is one request's tokens as their chunks arrived: %d requests of the sample, up to %d arrivals each (a longer stream shows evenly spaced ones and its last).", shown, analyze.ArrivalPoints)
		if shown > 0 {
			out = append(out, a)
		}
	}
	if sr := s.Series; sr != nil {
		if !known && len(sr.Server) > 0 {
			start = sr.Server[0].At
		} else if !known && len(sr.GPU) > 0 {
			start = sr.GPU[0].At
		}
		if len(sr.Server) > 0 {
			c := &chart{Name: "server", Title: "Server: requests running and waiting, " + label, XLabel: "time since the stage's first send (s)", YLabel: "requests", YZero: true}
			run := series{Name: "running", Color: "#0072b2", Line: true, Markers: len(sr.Server) <= 200}
			wait := series{Name: "waiting", Color: "#d55e00", Line: true, Markers: len(sr.Server) <= 200}
			var kv series
			for _, m := range sr.Server {
				t := secs(m.At, start)
				run.Points = append(run.Points, point{X: t, Y: m.Running, Tip: fmt.Sprintf("%.1f s: %.0f running", t, m.Running)})
				wait.Points = append(wait.Points, point{X: t, Y: m.Waiting, Tip: fmt.Sprintf("%.1f s: %.0f waiting", t, m.Waiting)})
				if m.KV != nil {
					kv.Points = append(kv.Points, point{X: t, Y: 100 * *m.KV, Tip: fmt.Sprintf("%.1f s: KV cache %.2f%% used", t, 100**m.KV)})
				}
			}
			c.Series = []series{run, wait}
			c.Note = fmt.Sprintf("From the server's /metrics, %d scrapes in the stage's window.", len(sr.Server))
			out = append(out, c)
			if len(kv.Points) > 0 {
				kv.Name, kv.Color, kv.Line, kv.Markers = "KV cache used", "#009e73", true, len(kv.Points) <= 200
				out = append(out, &chart{Name: "kv", Title: "Server: KV cache use, " + label, XLabel: "time since the stage's first send (s)", YLabel: "KV cache used (%)", YZero: true, Series: []series{kv}})
			}
		}
		if len(sr.GPU) > 0 {
			pw := series{Name: "power, all GPUs", Color: "#d55e00", Line: true, Markers: len(sr.GPU) <= 200}
			mem := series{Name: "memory used, all GPUs", Color: "#0072b2", Line: true, Markers: len(sr.GPU) <= 200}
			for _, g := range sr.GPU {
				t := secs(g.At, start)
				pw.Points = append(pw.Points, point{X: t, Y: g.PowerW, Tip: fmt.Sprintf("%.1f s: %.0f W, utilization %.0f%%", t, g.PowerW, g.UtilPct)})
				mem.Points = append(mem.Points, point{X: t, Y: g.MemMiB / 1024, Tip: fmt.Sprintf("%.1f s: %.1f GiB used", t, g.MemMiB/1024)})
			}
			out = append(out,
				&chart{Name: "gpu-power", Title: "GPU power, " + label, XLabel: "time since the stage's first send (s)", YLabel: "power (W)", YZero: true, Series: []series{pw}},
				&chart{Name: "gpu-memory", Title: "GPU memory, " + label, XLabel: "time since the stage's first send (s)", YLabel: "memory used (GiB)", YZero: true, Series: []series{mem}})
		}
	}
	return out
}

// secs is at in seconds since start.
func secs(at, start time.Duration) float64 { return (at - start).Seconds() }

func htmlReporter(result any) (Reporter, error) {
	p, err := pageOf(result)
	if err != nil {
		return nil, err
	}
	return func(w io.Writer) error {
		_, err := io.WriteString(w, p.html())
		return err
	}, nil
}

const pageCSS = `body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#111;max-width:1100px;margin:24px auto;padding:0 16px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #ccc;padding:3px 8px}td{text-align:right;font-variant-numeric:tabular-nums}th{background:#f4f4f4}
td.l{text-align:left}pre{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}
svg.chart{width:100%;height:auto;display:block;margin:12px 0}
.summary{border:2px solid #0072b2;border-radius:6px;background:#f3f8fc;padding:10px 16px;margin:12px 0 20px}
.summary h2{margin:4px 0 8px;border:0;font-size:17px}.summary .verdict{font-size:15px;font-weight:bold}
.summary ul{margin:4px 0;padding-left:20px}.summary li{margin:2px 0}
td.sig{font-weight:bold}td.ns{color:#666}
.warn{color:#8a4b00}#tip{position:absolute;background:#222;color:#fff;padding:3px 7px;border-radius:3px;font-size:12px;pointer-events:none;max-width:420px}
@media print{body{margin:0;max-width:none;font-size:11px}#tip,label.pick{display:none}.stage[hidden]{display:block!important}.stage{break-before:auto}svg.chart{break-inside:avoid;max-width:100%}h2,h3{break-after:avoid}pre{white-space:pre-wrap}}`

// pageJS shows hover values (data-tip) and switches the chosen stage of
// each run. The charts are drawn without it.
const pageJS = `(function(){var t=document.getElementById("tip");
document.addEventListener("mouseover",function(e){var el=e.target.closest&&e.target.closest("[data-tip]");if(!el){t.hidden=true;return}t.textContent=el.getAttribute("data-tip");t.hidden=false;t.style.left=(e.pageX+12)+"px";t.style.top=(e.pageY+12)+"px"});
document.querySelectorAll("select[data-run]").forEach(function(s){function show(){document.querySelectorAll('.stage[data-run="'+s.getAttribute("data-run")+'"]').forEach(function(p){p.hidden=p.getAttribute("data-stage")!==s.value})}s.addEventListener("change",show);show()})})();`

func (p *page) html() string {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n")
	fmt.Fprintf(&b, "<title>%s</title>\n<style>%s</style></head><body>\n<h1>%s</h1>\n", text(p.title), pageCSS, text(p.title))
	p.summaryHTML(&b)
	if p.sectionsFirst {
		for _, s := range p.sections {
			b.WriteString(s + "\n")
		}
	}
	for _, n := range p.runs {
		r := n.run
		if len(p.runs) > 1 {
			fmt.Fprintf(&b, "<h2>%s</h2>\n", text(n.name))
		} else {
			b.WriteString("<h2>Headline</h2>\n")
		}
		for _, note := range Notes(r) {
			fmt.Fprintf(&b, "<p class=\"warn\">%s</p>\n", text(note))
		}
		desc := Describe(r.Setup)
		if r.Source != nil {
			desc = DescribeSource(r) // never the zeros of fields the file does not state
		}
		fmt.Fprintf(&b, "<p>%s</p>\n", strings.ReplaceAll(text(desc), "\n", "<br>"))
		headlineHTML(&b, r.Figures(), r.Source)
		shardsHTML(&b, r)
		b.WriteString(capacityHTML(r.Capacity))
		b.WriteString("<p>aggregate = output tokens / stage wall time; request and decode tok/s are means over requests; TTFT = first token − sent; ITL = chunk gap / tokens in the chunk, per token (docs/METRICS.md).</p>\n")
	}
	if !p.sectionsFirst {
		for _, s := range p.sections {
			b.WriteString(s + "\n")
		}
	}
	b.WriteString("<h2>Charts</h2>\n")
	for _, c := range p.charts() {
		c.layout().svg(&b)
		b.WriteString("\n")
	}
	p.stagesHTML(&b)
	b.WriteString("<h2 id=\"warnings\">Warnings and verdicts</h2>\n<ul>\n")
	count := 0
	for _, n := range p.runs {
		for _, w := range n.run.Warnings {
			fmt.Fprintf(&b, "<li class=\"warn\">%swarning: %s</li>\n", text(prefix(len(p.runs), n.name)), text(w.String()))
			count++
		}
		verdictItems(&b, prefix(len(p.runs), n.name), n.run)
	}
	if count == 0 {
		b.WriteString("<li>no warnings</li>\n")
	}
	b.WriteString("</ul>\n<div id=\"tip\" hidden></div>\n<script>" + pageJS + "</script>\n</body></html>\n")
	return b.String()
}

// stagesHTML is each run's stages, one shown at a time (a select picks
// it): the stage's readings in words, its agent sessions and its charts.
func (p *page) stagesHTML(b *strings.Builder) {
	for ri, n := range p.runs {
		if len(n.run.Stages) == 0 {
			continue
		}
		fmt.Fprintf(b, "<h2>Stages of %s</h2>\n<label class=\"pick\">stage <select data-run=\"%d\">", text(n.name), ri)
		for si, s := range n.run.Stages {
			sel := ""
			if si == len(n.run.Stages)-1 {
				sel = " selected"
			}
			fmt.Fprintf(b, "<option value=\"%d\"%s>%s</option>", si, sel, text(analyze.Label(s.Stage)))
		}
		b.WriteString("</select></label>\n")
		for si := range n.run.Stages {
			s := &n.run.Stages[si]
			fmt.Fprintf(b, "<div class=\"stage\" data-run=\"%d\" data-stage=\"%d\"><h3>%s</h3>\n", ri, si, text(analyze.Label(s.Stage)))
			for _, l := range stageLines(s) {
				fmt.Fprintf(b, "<p>%s</p>\n", text(l))
			}
			b.WriteString(sessionsHTML(s.Stage, n.run.Setup.Workload.CacheCeiling))
			for _, c := range stageCharts(s) {
				c.layout().svg(b)
				b.WriteString("\n")
			}
			b.WriteString("</div>\n")
		}
	}
}

// verdictItems are a run's verdicts as the page's list items: the
// scaling steps and verdict, and its preset's figures and verdicts.
func verdictItems(b *strings.Builder, pre string, r *analyze.Run) {
	if v := r.Verdict; v != nil {
		for _, st := range v.Steps {
			fmt.Fprintf(b, "<li>%sscaling: %s</li>\n", text(pre), text(st.Text))
		}
		fmt.Fprintf(b, "<li><b>%sverdict: %s</b></li>\n", text(pre), text(v.Text))
	}
	for _, l := range ShapeLines(r) {
		fmt.Fprintf(b, "<li><b>%s%s</b></li>\n", text(pre), text(l))
	}
}

// stageLines are a stage's readings in words, as the text report has them.
func stageLines(s *analyze.Stage) []string {
	var out []string
	if l := ServerLine(s.Stage); l != "" {
		out = append(out, l)
	}
	if s.Server != nil {
		out = append(out, ServerReadingLine(s.Stage, s.Server))
	}
	if s.GPU != nil {
		out = append(out, GPULine(s.Stage, s.GPU))
	}
	return append(out, CostLines(s)...)
}

// headlineHTML is the headline table; a figure another tool's file (src)
// does not hold is "—", never a number.
func headlineHTML(b *strings.Builder, stages []summary.Stage, src *analyze.Source) {
	open := len(stages) > 0
	for _, s := range stages {
		open = open && s.Rate > 0
	}
	b.WriteString("<table><tr>")
	for _, c := range columns(DefaultPercentiles, open) {
		fmt.Fprintf(b, "<th>%s</th>", text(c))
	}
	b.WriteString("</tr>\n")
	rows := Rows(stages, DefaultPercentiles)
	headlineBlank(rows, src)
	for _, r := range rows {
		b.WriteString("<tr>")
		for _, c := range r {
			if src != nil && (c == "-" || c == "- / -") {
				c = strings.ReplaceAll(c, "-", "—")
			}
			fmt.Fprintf(b, "<td>%s</td>", text(c))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}

// baselineHTML is the run against a baseline: both numbers, the ratio
// with its arithmetic, per GPU where counts differ, the fairness list.
func baselineHTML(c *analyze.BaselineComparison) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<h2>Against baseline %s</h2>\n<p>%s (%s) against %s (%s; source: %s)</p>\n", text(c.Baseline.Name), text(c.Run.Name), gpuCount(c.Run.GPUs), text(c.Baseline.Name), gpuCount(c.Baseline.GPUs), text(or(c.Baseline.Source, "not stated")))
	if len(c.Ratios) == 0 {
		b.WriteString("<p>no concurrency level is shared</p>\n")
	} else {
		b.WriteString("<table><tr><th>C</th><th>this run tok/s</th><th>baseline tok/s</th><th>ratio</th><th>per GPU</th><th>per-GPU ratio</th></tr>\n")
		for _, r := range c.Ratios {
			gpu, gr := "", ""
			if r.PerGPU {
				gpu, gr = f1(r.RunGPU)+" / "+f1(r.BaseGPU), fmt.Sprintf("%.2f×", r.GPURatio)
			}
			fmt.Fprintf(&b, "<tr><td>%d</td><td>%s</td><td>%s</td><td>%s / %s = %.2f×</td><td>%s</td><td>%s</td></tr>\n", r.C, f1(r.Run), f1(r.Base), f1(r.Run), f1(r.Base), r.Ratio, gpu, gr)
		}
		b.WriteString("</table>\n")
	}
	b.WriteString("<h3>Setup (fairness)</h3>\n<table><tr><th></th><th>this run</th><th>baseline</th><th>verdict</th></tr>\n")
	for _, f := range c.Fields {
		fmt.Fprintf(&b, "<tr><td class=\"l\">%s</td><td class=\"l\">%s</td><td class=\"l\">%s</td><td class=\"l\">%s</td></tr>\n", text(f.Name), text(or(f.A, "?")), text(or(f.B, "?")), text(f.Verdict))
	}
	if !c.Basis.Judged() {
		fmt.Fprintf(&b, "</table>\n<p class=\"warn\">ratios %s</p>\n<table hidden>", text(analyze.NotJudged(c.Basis.Withheld)))
	}
	fmt.Fprintf(&b, "</table>\n<p><b>verdict: %s</b></p>\n", text(c.Verdict))
	if c.Claim != "" {
		fmt.Fprintf(&b, "<p>claim: %s</p>\n", text(c.Claim))
	}
	return b.String()
}

// apart says whether two neighbouring levels of a curve are more than 4×
// apart: a line between them would draw a curve (and crossings) nobody
// measured, so their points stand alone.
func apart(ps []point) bool {
	for i := 1; i < len(ps); i++ {
		lo, hi := min(ps[i-1].X, ps[i].X), max(ps[i-1].X, ps[i].X)
		if lo > 0 && hi/lo > 4 {
			return true
		}
	}
	return false
}

const apartNote = "Points more than 4× apart in load are not joined: what lies between them was not measured."
