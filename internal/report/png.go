package report

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gobold"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
	"golang.org/x/image/vector"

	"github.com/tokperf/tokperf/internal/analyze"
)

// The png format rasterizes the scene the html format draws as SVG, in
// pure Go (golang.org/x/image's vector rasterizer and the Go fonts): no
// browser, no C library, 0.98 MB of binary (the two Go fonts are 0.27 MB of it) where gonum.org/v1/plot
// adds about 9 MB (docs/METRICS.md, charts).

// Pick is a result with the one chart the png format draws of it (a name
// of Charts, NAME@STAGE for a stage's, e.g. timeline@C=16); other formats
// render the result whole.
type Pick struct {
	Chart  string
	Result any
}

// ErrNoChart is the error of a png asked for a chart the result lacks.
var ErrNoChart = errors.New("no chart")

// pngScale is the image's pixels per layout pixel (crisp on a slide).
const pngScale = 2

// ChartNames are the charts a page can hold, for --chart: the first six
// are of the runs, the rest of one stage (NAME@STAGE; the last stage
// without it).
var ChartNames = []string{"throughput", "ttft", "itl", "tpot", "pareto", "ttft-split", "timeline", "arrivals", "server", "kv", "gpu-power", "gpu-memory"}

func pngReporter(result any) (Reporter, error) {
	name := ""
	if p, ok := result.(Pick); ok {
		name, result = p.Chart, p.Result
	}
	pg, err := pageOf(result)
	if err != nil {
		return nil, err
	}
	c, err := pg.find(name)
	if err != nil {
		return nil, err
	}
	// Fast compression: a chart is flat colour, the files stay small.
	return func(w io.Writer) error {
		return (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(w, c.layout().raster())
	}, nil
}

// find is the chart called name (NAME or NAME@STAGE; "" is the first).
func (p *page) find(name string) (*chart, error) {
	want, stage, _ := strings.Cut(name, "@")
	all := p.charts()
	var have []string
	for _, c := range all {
		if want == "" || c.Name == want && stage == "" {
			return c, nil
		}
		have = append(have, c.Name)
	}
	for _, n := range p.runs {
		for si := range n.run.Stages {
			s := &n.run.Stages[si]
			label := analyze.Label(s.Stage)
			last := si == len(n.run.Stages)-1
			for _, c := range stageCharts(s) {
				if c.Name == want && (label == stage || strings.TrimPrefix(label, "C=") == stage || stage == "" && last) {
					return c, nil
				}
				have = append(have, c.Name+"@"+label)
			}
		}
	}
	if len(all) == 0 && len(have) == 0 {
		if want == "" {
			// Nothing to draw is said on an image, not refused: a run
			// whose stages all failed still gets its png.
			return &chart{Name: "none", Title: p.title, XLabel: "concurrency", YLabel: "aggregate output tok/s",
				Note: "This result has no chart: no stage finished a request, or it is not a run (the text and html formats show it)."}, nil
		}
		return nil, fmt.Errorf("%w: this result has none (the text, json, csv, markdown and html formats render it)", ErrNoChart)
	}
	sort.Strings(have)
	return nil, fmt.Errorf("%w %q in this result: it has %s", ErrNoChart, name, strings.Join(dedup(have), ", "))
}

func dedup(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// fonts are the Go fonts, parsed once; a parsed font may be shared.
var fonts = sync.OnceValues(func() (regular, bold *opentype.Font) {
	regular, _ = opentype.Parse(goregular.TTF)
	bold, _ = opentype.Parse(gobold.TTF)
	return regular, bold
})

// faces are one raster's font faces by size and weight. A face keeps its
// glyph rasterizer and is not safe for concurrent use, so each raster
// makes its own: renders may run in parallel.
type faces map[[2]float64]font.Face

func (fs faces) face(size float64, bold bool) font.Face {
	key := [2]float64{size, 0}
	f, b := fonts()
	if bold {
		key[1], f = 1, b
	}
	if fc, ok := fs[key]; ok {
		return fc
	}
	fc, _ := opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingFull})
	fs[key] = fc
	return fc
}

func parseColor(s string) color.RGBA {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	if err != nil || len(s) != 7 {
		return color.RGBA{0, 0, 0, 255}
	}
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255}
}

// raster draws the scene on an image, pngScale pixels a layout pixel.
func (s *scene) raster() *image.RGBA {
	k := float64(pngScale)
	img := image.NewRGBA(image.Rect(0, 0, int(math.Ceil(s.w*k)), int(math.Ceil(s.h*k))))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	z := vector.NewRasterizer(0, 0) // one for every shape: it keeps its buffer
	fs := faces{}
	for _, sh := range s.shapes {
		switch sh.kind {
		case 'p':
			for _, seg := range dashed(sh.pts, sh.dash) {
				for i := 0; i+3 < len(seg); i += 2 {
					fillPolygon(img, z, stroke(seg[i]*k, seg[i+1]*k, seg[i+2]*k, seg[i+3]*k, sh.width*k), parseColor(sh.stroke))
				}
			}
		case 'r':
			// Rectangles are the background: whole pixels, no edges to smooth.
			x, y := sh.pts[0]*k, sh.pts[1]*k
			r := image.Rect(int(math.Round(x)), int(math.Round(y)), int(math.Round(x+sh.w*k)), int(math.Round(y+sh.h*k)))
			draw.Draw(img, r, image.NewUniform(parseColor(sh.fill)), image.Point{}, draw.Src)
		case 'c':
			x, y, r := sh.pts[0]*k, sh.pts[1]*k, sh.r*k
			if sh.fill != "" {
				fillPolygon(img, z, [][]float64{circle(x, y, r, false)}, parseColor(sh.fill))
			}
			if sh.stroke != "" {
				w := sh.width * k / 2
				fillPolygon(img, z, [][]float64{circle(x, y, r+w, false), circle(x, y, r-w, true)}, parseColor(sh.stroke))
			}
		case 'g':
			poly := make([]float64, len(sh.pts))
			for i, v := range sh.pts {
				poly[i] = v * k
			}
			fillPolygon(img, z, [][]float64{poly}, parseColor(sh.fill))
		case 't':
			drawText(img, fs, sh, k)
		}
	}
	return img
}

// dashed cuts a polyline into its drawn pieces by an SVG dash pattern.
func dashed(pts []float64, pattern string) [][]float64 {
	var dash []float64
	for _, f := range strings.Fields(pattern) {
		if v, err := strconv.ParseFloat(f, 64); err == nil && v > 0 {
			dash = append(dash, v)
		}
	}
	if len(dash) == 0 {
		return [][]float64{pts}
	}
	if len(dash)%2 == 1 {
		dash = append(dash, dash...)
	}
	var out [][]float64
	var cur []float64
	di, left, on := 0, dash[0], true
	for i := 0; i+3 < len(pts); i += 2 {
		x, y, x2, y2 := pts[i], pts[i+1], pts[i+2], pts[i+3]
		seg := math.Hypot(x2-x, y2-y)
		for seg > 0 {
			step := math.Min(seg, left)
			nx, ny := x+(x2-x)*step/seg, y+(y2-y)*step/seg
			if on {
				if cur == nil {
					cur = []float64{x, y}
				}
				cur = append(cur, nx, ny)
			}
			x, y, seg, left = nx, ny, seg-step, left-step
			if left <= 1e-9 {
				if on && cur != nil {
					out, cur = append(out, cur), nil
				}
				di, on = (di+1)%len(dash), !on
				left = dash[di]
			}
		}
	}
	if cur != nil {
		out = append(out, cur)
	}
	return out
}

// stroke is a line of width w as a polygon, with square ends half the
// width beyond the points (so consecutive pieces meet).
func stroke(x1, y1, x2, y2, w float64) [][]float64 {
	dx, dy := x2-x1, y2-y1
	l := math.Hypot(dx, dy)
	if l == 0 {
		dx, dy, l = 1, 0, 1
	}
	ux, uy := dx/l*w/2, dy/l*w/2
	nx, ny := -uy, ux
	return [][]float64{{x1 - ux + nx, y1 - uy + ny, x2 + ux + nx, y2 + uy + ny, x2 + ux - nx, y2 + uy - ny, x1 - ux - nx, y1 - uy - ny}}
}

func circle(x, y, r float64, reverse bool) []float64 {
	const n = 28
	var out []float64
	for i := range n {
		a := 2 * math.Pi * float64(i) / n
		if reverse {
			a = -a
		}
		out = append(out, x+r*math.Cos(a), y+r*math.Sin(a))
	}
	return out
}

// fillPolygon fills polygons (x, y pairs; an inner one wound the other way
// is a hole) on img with z, rasterizing only their bounding box.
func fillPolygon(img *image.RGBA, z *vector.Rasterizer, polys [][]float64, c color.RGBA) {
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, p := range polys {
		for i := 0; i+1 < len(p); i += 2 {
			minX, maxX = math.Min(minX, p[i]), math.Max(maxX, p[i])
			minY, maxY = math.Min(minY, p[i+1]), math.Max(maxY, p[i+1])
		}
	}
	b := image.Rect(int(math.Floor(minX)), int(math.Floor(minY)), int(math.Ceil(maxX))+1, int(math.Ceil(maxY))+1).Intersect(img.Bounds())
	if b.Empty() {
		return
	}
	z.Reset(b.Dx(), b.Dy())
	ox, oy := float32(b.Min.X), float32(b.Min.Y)
	for _, p := range polys {
		z.MoveTo(float32(p[0])-ox, float32(p[1])-oy)
		for i := 2; i+1 < len(p); i += 2 {
			z.LineTo(float32(p[i])-ox, float32(p[i+1])-oy)
		}
		z.ClosePath()
	}
	z.Draw(img, b, image.NewUniform(c), image.Point{})
}

// drawText draws a text shape at its anchor; a vertical one is drawn
// on its own image and turned.
func drawText(img *image.RGBA, fs faces, sh shape, k float64) {
	fc := fs.face(sh.size*k, sh.bold)
	width := font.MeasureString(fc, sh.text).Ceil()
	off := map[byte]int{'s': 0, 'm': width / 2, 'e': width}[sh.anchor]
	col := image.NewUniform(parseColor(sh.fill))
	x, y := int(sh.pts[0]*k), int(sh.pts[1]*k)
	if !sh.vertical {
		d := font.Drawer{Dst: img, Src: col, Face: fc, Dot: fixed.P(x-off, y)}
		d.DrawString(sh.text)
		return
	}
	m := fc.Metrics()
	h := (m.Ascent + m.Descent).Ceil()
	tmp := image.NewRGBA(image.Rect(0, 0, width, h))
	d := font.Drawer{Dst: tmp, Src: col, Face: fc, Dot: fixed.P(0, m.Ascent.Ceil())}
	d.DrawString(sh.text)
	// Turned counter-clockwise: the text's (tx, ty) lands at
	// (x - ascent + ty, y + off - tx).
	for ty := 0; ty < h; ty++ {
		for tx := 0; tx < width; tx++ {
			c := tmp.RGBAAt(tx, ty)
			if c.A == 0 {
				continue
			}
			px, py := x-m.Ascent.Ceil()+ty, y+off-tx
			if !image.Pt(px, py).In(img.Bounds()) {
				continue
			}
			bg := img.RGBAAt(px, py)
			a := uint32(c.A)
			blend := func(f, b uint8) uint8 { return uint8((uint32(f)*255 + uint32(b)*(255-a)) / 255) }
			// c is premultiplied: f already carries its alpha.
			img.SetRGBA(px, py, color.RGBA{blend(c.R, bg.R), blend(c.G, bg.G), blend(c.B, bg.B), 255})
		}
	}
}
