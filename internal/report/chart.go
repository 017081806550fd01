package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// A chart is drawn in two steps: its data (chart: series of points,
// segments, marks, with axes and units) is laid out into a scene of
// plain shapes (lines, rectangles, circles, text) in pixels, and the
// scene is written as SVG (the html format) or rasterized (the png
// format). Both formats draw the same scene, so an image in a README is
// the chart of the page.
//
// Why hand-written SVG rather than an inlined chart library, by
// measurement (docs/METRICS.md §9): a three-stage sweep's page is 112 kB
// and reaches its first frame in Chromium in 0.2–0.5 s, while inlining
// echarts 5.6.0 (dist/echarts.min.js, 1.03 MB) makes every page over 1 MB
// and took 1.7–2.1 s for 29 small charts; SVG needs no script to draw
// (the script only shows hover values and picks the stage), so it prints
// as drawn, and the same shapes give the png images without a browser.

// chart is one chart's data.
type chart struct {
	Name           string // id and --chart name, e.g. "throughput"
	Title          string
	XLabel, YLabel string // with their units
	XLog           bool   // log2 scale (concurrency)
	YZero          bool   // the y axis starts at 0
	Series         []series
	Segments       []segment // horizontal bars (the per-request timeline)
	Marks          []mark    // vertical lines (the knee)
	Note           string    // a line under the chart
	// YReverse puts the first segment row at the top.
	YReverse bool
	// Rows, when set, draws the segments as bars, one row each (the Y
	// of row i is i; a stacked bar per row), named on the y axis.
	Rows []string
}

// segmentShape draws a segment from pixel x1 to x2 at row y: a bar that
// fills most of its row, or a timeline's thin line (its many rows share
// the plot's height).
func (c *chart) segmentShape(g segment, x1, x2, y float64) shape {
	if n := len(c.Rows); n > 0 {
		h := math.Min(40, 0.6*plotH/float64(n))
		return shape{kind: 'r', pts: []float64{x1, y - h/2}, w: math.Max(x2-x1, 0.5), h: h, fill: g.Color, tip: g.Tip}
	}
	return shape{kind: 'p', pts: []float64{x1, y, math.Max(x2, x1+0.5), y}, stroke: g.Color, width: math.Max(0.6, math.Min(4, plotH/float64(len(c.Segments)+1))), tip: g.Tip}
}

// yAxis is the y axis of ys; with Rows, half a row past the first and the
// last, ticked at each row with its name.
func (c *chart) yAxis(ys []float64) *axis {
	if len(c.Rows) == 0 {
		return newAxis(ys, false, c.YZero)
	}
	a := &axis{lo: -0.5, hi: float64(len(c.Rows)) - 0.5}
	for i, name := range c.Rows {
		a.ticks, a.tickLabels = append(a.ticks, float64(i)), append(a.tickLabels, name)
	}
	return a
}

type series struct {
	Name    string
	Color   string
	Points  []point
	Line    bool // join the points
	Markers bool // draw each point (with its hover value)
	Dash    string
	Ring    []bool // per point: a ring around it (the Pareto frontier)
	Tip     string // the line's hover value
	// Marker is the points' shape: circle (""), square, triangle or
	// diamond, so series of one colour differ by more than their dash.
	Marker string
	// EndLabel is written beside the line's last point (p50, p99).
	EndLabel string
	// PointLabels are written beside each point (the Pareto chart's
	// concurrency levels); "" leaves a point bare.
	PointLabels []string
}

type point struct {
	X, Y float64
	Tip  string // the hover value
}

// segment is a horizontal bar from X1 to X2 at row Y.
type segment struct {
	X1, X2, Y float64
	Color     string
	Tip       string
}

type mark struct {
	X     float64
	Label string
}

// palette is Okabe and Ito's, told apart with most colour vision; its
// yellow (#f0e442) is last, being faint on white.
var palette = []string{"#0072b2", "#e69f00", "#009e73", "#d55e00", "#cc79a7", "#56b4e9", "#000000", "#f0e442"}

func hue(i int) string { return palette[i%len(palette)] }

// markers are the point shapes, so that curves differ by shape as well as
// colour: a run's index, or a percentile's, picks one.
var markers = []string{"circle", "square", "triangle", "diamond"}

func markerOf(i int) string { return markers[i%len(markers)] }

// markerShape is a marker of kind at (x, y), about r in radius.
func markerShape(kind string, x, y, r float64, fill string) shape {
	switch kind {
	case "square":
		r *= 0.9
		return shape{kind: 'g', pts: []float64{x - r, y - r, x + r, y - r, x + r, y + r, x - r, y + r}, fill: fill, stroke: "#ffffff", width: 1, marker: kind}
	case "triangle":
		r *= 1.25
		return shape{kind: 'g', pts: []float64{x, y - r, x + r*0.95, y + r*0.7, x - r*0.95, y + r*0.7}, fill: fill, stroke: "#ffffff", width: 1, marker: kind}
	case "diamond":
		r *= 1.25
		return shape{kind: 'g', pts: []float64{x, y - r, x + r, y, x, y + r, x - r, y}, fill: fill, stroke: "#ffffff", width: 1, marker: kind}
	}
	return shape{kind: 'c', pts: []float64{x, y}, r: r, fill: fill, stroke: "#ffffff", width: 1, marker: "circle"}
}

// shape is one drawn thing, in pixels.
type shape struct {
	kind     byte      // 'p' polyline, 'r' rect, 'c' circle, 'g' filled polygon, 't' text
	pts      []float64 // x, y pairs (polyline), x, y (rect corner, circle centre, text anchor)
	w, h, r  float64
	stroke   string
	fill     string
	width    float64
	dash     string
	text     string
	size     float64
	anchor   byte // 's' start, 'm' middle, 'e' end
	vertical bool // text turned 90° counter-clockwise
	bold     bool
	tip      string // hover value
	data     [2]float64
	hasData  bool
	series   string
	marker   string // a point's marker kind (data-marker)
	legend   string // a legend entry's series name (data-legend)
	class    string // the SVG element's class
}

type scene struct {
	name, title string
	w, h        float64
	shapes      []shape
}

func (s *scene) add(sh shape) { s.shapes = append(s.shapes, sh) }

func (s *scene) line(x1, y1, x2, y2 float64, stroke string, width float64, dash string) {
	s.add(shape{kind: 'p', pts: []float64{x1, y1, x2, y2}, stroke: stroke, width: width, dash: dash})
}

func (s *scene) text(x, y float64, t string, size float64, anchor byte, fill string) {
	s.add(shape{kind: 't', pts: []float64{x, y}, text: t, size: size, anchor: anchor, fill: fill})
}

// textWidth estimates a string's width in pixels at size (the layout's
// estimate; both renderers draw the real glyphs).
func textWidth(t string, size float64) float64 { return 0.56 * size * float64(len([]rune(t))) }

// axis maps values to pixels.
type axis struct {
	lo, hi     float64 // data range
	log        bool
	from, to   float64 // pixel range
	ticks      []float64
	tickLabels []string
}

func (a *axis) pos(v float64) float64 {
	lo, hi := a.lo, a.hi
	if a.log {
		v, lo, hi = math.Log2(v), math.Log2(lo), math.Log2(hi)
	}
	if hi == lo {
		return (a.from + a.to) / 2
	}
	return a.from + (v-lo)/(hi-lo)*(a.to-a.from)
}

// newAxis spans the values with nice ticks: 1, 2 or 5 × 10ⁿ apart on a
// linear axis, powers of two on a log one.
func newAxis(vals []float64, log, zero bool) *axis {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) || (log && v <= 0) {
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 1
		if log {
			lo = 1
		}
	}
	a := &axis{log: log}
	if log {
		a.lo, a.hi = math.Exp2(math.Floor(math.Log2(lo))), math.Exp2(math.Ceil(math.Log2(hi)))
		if a.hi == a.lo {
			a.hi *= 2
		}
		step := math.Max(1, math.Ceil((math.Log2(a.hi)-math.Log2(a.lo))/8))
		for e := math.Log2(a.lo); e <= math.Log2(a.hi)+1e-9; e += step {
			a.ticks = append(a.ticks, math.Exp2(e))
		}
	} else {
		if zero {
			lo = math.Min(lo, 0)
		}
		if hi == lo {
			hi, lo = hi+1, lo-math.Min(1, math.Abs(lo))
			if zero {
				lo = math.Max(lo, 0)
			}
		}
		step := niceStep((hi - lo) / 5)
		a.lo, a.hi = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
		for v := a.lo; v <= a.hi+step/1e6; v += step {
			a.ticks = append(a.ticks, math.Round(v/step)*step)
		}
	}
	prec := 0
	if !log && len(a.ticks) > 1 {
		prec = max(0, int(-math.Floor(math.Log10(a.ticks[1]-a.ticks[0])+1e-9)))
	}
	for _, t := range a.ticks {
		a.tickLabels = append(a.tickLabels, tickLabel(t, prec))
	}
	return a
}

func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// tickLabel prints a tick with prec decimals, thousands as k.
func tickLabel(v float64, prec int) string {
	if v == 0 {
		return "0"
	}
	if math.Abs(v) >= 10000 && math.Mod(v, 1000) == 0 {
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}

// Chart geometry, in pixels.
const (
	chartW     = 1000.0
	plotH      = 300.0
	marginL    = 72.0
	marginR    = 56.0 // room for the labels at the lines' ends
	titleH     = 26.0
	legendRowH = 18.0
	marginB    = 48.0
	noteWidth  = 150 // characters of a note's line under the chart
)

// layout draws a chart's scene: title, legend, axes with ticks and units,
// grid, then marks, segments, series and their markers.
func (c *chart) layout() *scene {
	s := &scene{name: c.Name, title: c.Title, w: chartW}
	// The legend: one row of entries, wrapped to the width.
	type entry struct {
		x, y  float64
		s     series
		width float64
	}
	var legend []entry
	x, rows := marginL, 0
	for _, se := range c.Series {
		if se.Name == "" {
			continue
		}
		w := 30 + textWidth(se.Name, 12) + 16
		if x+w > chartW-marginR && x > marginL {
			x, rows = marginL, rows+1
		}
		legend = append(legend, entry{x: x, y: float64(rows), s: se, width: w})
		x += w
	}
	if len(legend) > 0 {
		rows++
	}
	top := titleH + float64(rows)*legendRowH + 8
	s.h = top + plotH + marginB
	if c.Note != "" {
		s.h += 18 * float64(len(wrap(c.Note, noteWidth)))
	}
	s.add(shape{kind: 'r', pts: []float64{0, 0}, w: s.w, h: s.h, fill: "#ffffff"})
	s.add(shape{kind: 't', pts: []float64{marginL, 18}, text: c.Title, size: 15, anchor: 's', fill: "#111111", bold: true})
	for _, e := range legend {
		y := titleH + e.y*legendRowH + 10
		s.add(shape{kind: 'p', pts: []float64{e.x, y, e.x + 24, y}, stroke: e.s.Color, width: 2.5, dash: e.s.Dash, legend: e.s.Name})
		if e.s.Markers {
			m := markerShape(e.s.Marker, e.x+12, y, 4.5, e.s.Color)
			m.legend = e.s.Name
			s.add(m)
		}
		s.text(e.x+30, y+4, e.s.Name, 12, 's', "#222222")
	}
	var xs, ys []float64
	for _, se := range c.Series {
		for _, p := range se.Points {
			xs, ys = append(xs, p.X), append(ys, p.Y)
		}
	}
	for _, g := range c.Segments {
		xs, ys = append(xs, g.X1, g.X2), append(ys, g.Y)
	}
	for _, m := range c.Marks {
		xs = append(xs, m.X)
	}
	xa, ya := newAxis(xs, c.XLog, !c.XLog), c.yAxis(ys)
	xa.from, xa.to = marginL, chartW-marginR
	ya.from, ya.to = top+plotH, top
	if c.YReverse {
		ya.from, ya.to = top, top+plotH
	}
	bottom := top + plotH
	// Grid and ticks.
	for i, t := range ya.ticks {
		y := ya.pos(t)
		s.line(marginL, y, chartW-marginR, y, "#e4e4e4", 1, "")
		s.text(marginL-6, y+4, ya.tickLabels[i], 11, 'e', "#444444")
	}
	for i, t := range xa.ticks {
		x := xa.pos(t)
		s.line(x, top, x, bottom, "#eeeeee", 1, "")
		s.line(x, bottom, x, bottom+4, "#444444", 1, "")
		s.text(x, bottom+16, xa.tickLabels[i], 11, 'm', "#444444")
	}
	s.line(marginL, bottom, chartW-marginR, bottom, "#444444", 1, "")
	s.line(marginL, top, marginL, bottom, "#444444", 1, "")
	s.text((marginL+chartW-marginR)/2, bottom+36, c.XLabel, 12, 'm', "#222222")
	s.add(shape{kind: 't', pts: []float64{16, (top + bottom) / 2}, text: c.YLabel, size: 12, anchor: 'm', fill: "#222222", vertical: true})
	for _, m := range c.Marks {
		x := xa.pos(m.X)
		s.line(x, top, x, bottom, "#888888", 1.5, "6 4")
		s.text(x+4, top+12, m.Label, 11, 's', "#555555")
	}
	for _, g := range c.Segments {
		y := ya.pos(g.Y)
		x1, x2 := xa.pos(g.X1), xa.pos(g.X2)
		s.add(c.segmentShape(g, x1, x2, y))
	}
	var ends []shape
	for _, se := range c.Series {
		var pts []float64
		for _, p := range se.Points {
			if math.IsNaN(p.X) || math.IsNaN(p.Y) || (c.XLog && p.X <= 0) {
				continue
			}
			pts = append(pts, xa.pos(p.X), ya.pos(p.Y))
		}
		if se.Line && len(pts) >= 4 {
			s.add(shape{kind: 'p', pts: pts, stroke: se.Color, width: 2, dash: se.Dash, series: se.Name, tip: se.Tip})
		}
		if !se.Markers {
			continue
		}
		k := 0
		for i, p := range se.Points {
			if math.IsNaN(p.X) || math.IsNaN(p.Y) || (c.XLog && p.X <= 0) {
				continue
			}
			cx, cy := pts[2*k], pts[2*k+1]
			k++
			if i < len(se.Ring) && se.Ring[i] {
				s.add(shape{kind: 'c', pts: []float64{cx, cy}, r: 9, stroke: "#111111", width: 1.5})
			}
			m := markerShape(se.Marker, cx, cy, 4.5, se.Color)
			m.tip, m.data, m.hasData, m.series = p.Tip, [2]float64{p.X, p.Y}, true, se.Name
			s.add(m)
			if i < len(se.PointLabels) && se.PointLabels[i] != "" {
				l := shape{kind: 't', pts: []float64{cx + 9, cy - 7}, text: se.PointLabels[i], size: 11, anchor: 's', fill: "#222222", class: "point-label"}
				if cx+9+textWidth(l.text, 11) > chartW-4 {
					l.pts[0], l.anchor = cx-9, 'e' // at the right edge: on the point's left
				}
				s.add(l)
			}
		}
		if se.EndLabel != "" && len(pts) >= 2 {
			ends = append(ends, shape{kind: 't', pts: []float64{pts[len(pts)-2] + 9, pts[len(pts)-1] + 4}, text: se.EndLabel, size: 11, anchor: 's', fill: se.Color, bold: true, class: "end-label"})
		}
	}
	// Labels at the lines' ends are kept 12 px apart, so lines that end
	// together (p50 = p99) still show each label.
	sort.SliceStable(ends, func(i, j int) bool { return ends[i].pts[1] < ends[j].pts[1] })
	for i := 1; i < len(ends); i++ {
		if d := ends[i].pts[1] - ends[i-1].pts[1]; d < 12 && math.Abs(ends[i].pts[0]-ends[i-1].pts[0]) < 40 {
			ends[i].pts[1] = ends[i-1].pts[1] + 12
		}
	}
	for _, e := range ends {
		s.add(e)
	}
	for i, l := range wrap(c.Note, noteWidth) {
		s.text(marginL, bottom+marginB+12+18*float64(i), l, 11, 's', "#333333")
	}
	return s
}

// wrap breaks a line at spaces into pieces of at most n characters.
func wrap(t string, n int) []string {
	if t == "" {
		return nil
	}
	var out []string
	line := ""
	for _, w := range strings.Fields(t) {
		if line != "" && len([]rune(line))+1+len([]rune(w)) > n {
			out = append(out, line)
			line = w
			continue
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(out, line)
}

// svg writes the scene as an SVG element: hover values are data-tip
// attributes the page's script shows, and each marker carries its
// values in data-x and data-y.
func (s *scene) svg(b *strings.Builder) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="%s" viewBox="0 0 %s %s" role="img" aria-label="%s">`, attr(s.name), f(s.w), f(s.h), attr(s.title))
	for _, sh := range s.shapes {
		tip := ""
		if sh.tip != "" {
			tip = ` data-tip="` + attr(sh.tip) + `"`
		}
		if sh.hasData {
			tip += fmt.Sprintf(` data-x="%s" data-y="%s"`, strconv.FormatFloat(sh.data[0], 'g', -1, 64), strconv.FormatFloat(sh.data[1], 'g', -1, 64))
		}
		if sh.series != "" {
			tip += ` data-series="` + attr(sh.series) + `"`
		}
		if sh.marker != "" {
			tip += ` data-marker="` + sh.marker + `"`
		}
		if sh.legend != "" {
			tip += ` data-legend="` + attr(sh.legend) + `"`
			if sh.dash != "" {
				tip += ` data-dash="` + sh.dash + `"`
			}
			if sh.kind != 'p' {
				tip += ` data-color="` + sh.fill + `"`
			}
		}
		if sh.class != "" {
			tip += ` class="` + sh.class + `"`
		}
		switch sh.kind {
		case 'p':
			dash := ""
			if sh.dash != "" {
				dash = ` stroke-dasharray="` + sh.dash + `"`
			}
			if len(sh.pts) == 4 {
				fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s%s/>`, f(sh.pts[0]), f(sh.pts[1]), f(sh.pts[2]), f(sh.pts[3]), sh.stroke, f(sh.width), dash, tip)
				continue
			}
			b.WriteString(`<polyline fill="none" points="`)
			for i := 0; i < len(sh.pts); i += 2 {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(f(sh.pts[i]) + "," + f(sh.pts[i+1]))
			}
			fmt.Fprintf(b, `" stroke="%s" stroke-width="%s" stroke-linejoin="round"%s%s/>`, sh.stroke, f(sh.width), dash, tip)
		case 'r':
			fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s/>`, f(sh.pts[0]), f(sh.pts[1]), f(sh.w), f(sh.h), sh.fill, tip)
		case 'c':
			fill, stroke := sh.fill, ""
			if fill == "" {
				fill = "none"
			}
			if sh.stroke != "" {
				stroke = fmt.Sprintf(` stroke="%s" stroke-width="%s"`, sh.stroke, f(sh.width))
			}
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="%s" fill="%s"%s%s/>`, f(sh.pts[0]), f(sh.pts[1]), f(sh.r), fill, stroke, tip)
		case 'g':
			b.WriteString(`<polygon points="`)
			for i := 0; i < len(sh.pts); i += 2 {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(f(sh.pts[i]) + "," + f(sh.pts[i+1]))
			}
			fmt.Fprintf(b, `" fill="%s" stroke="%s" stroke-width="%s"%s/>`, sh.fill, or(sh.stroke, "none"), f(sh.width), tip)
		case 't':
			anchor := map[byte]string{'s': "start", 'm': "middle", 'e': "end"}[sh.anchor]
			extra := ""
			if sh.bold {
				extra = ` font-weight="bold"`
			}
			if sh.vertical {
				extra += fmt.Sprintf(` transform="rotate(-90 %s %s)"`, f(sh.pts[0]), f(sh.pts[1]))
			}
			fmt.Fprintf(b, `<text x="%s" y="%s" font-size="%s" text-anchor="%s" fill="%s"%s%s>%s</text>`, f(sh.pts[0]), f(sh.pts[1]), f(sh.size), anchor, sh.fill, extra, tip, text(sh.text))
		}
	}
	b.WriteString("</svg>")
}

// f prints a pixel coordinate with one decimal at most.
func f(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

var (
	textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
)

// text escapes s for HTML text, attr for an attribute's value.
func text(s string) string { return textEscaper.Replace(s) }

func attr(s string) string { return attrEscaper.Replace(s) }

// pareto marks the points no other point beats on both axes (higher is
// better on each): the frontier.
func pareto(ps []point) []bool {
	out := make([]bool, len(ps))
	for i, p := range ps {
		if math.IsNaN(p.X) || math.IsNaN(p.Y) {
			continue
		}
		out[i] = true
		for j, q := range ps {
			if j != i && q.X >= p.X && q.Y >= p.Y && (q.X > p.X || q.Y > p.Y) {
				out[i] = false
				break
			}
		}
	}
	return out
}

// frontierLine is the frontier's points by x, to draw it as one line.
func frontierLine(ps []point, on []bool) []point {
	var out []point
	for i, p := range ps {
		if on[i] {
			out = append(out, point{X: p.X, Y: p.Y})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].X < out[j].X })
	return out
}
