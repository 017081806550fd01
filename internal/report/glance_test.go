package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/analyze"
)

// The page opens with the summary box: the verdict and the key numbers,
// before the headline table and the first chart.
func TestHTMLSummaryFirst(t *testing.T) {
	t.Parallel()
	r := run()
	var out bytes.Buffer
	if err := Render(&out, "html", r); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	sum, table, chart := strings.Index(page, `<section class="summary"`), strings.Index(page, "<table>"), strings.Index(page, "<svg")
	if sum < 0 || sum > table || sum > chart {
		t.Fatalf("summary at %d, table at %d, first chart at %d: want the summary first", sum, table, chart)
	}
	box := page[sum:strings.Index(page, "</section>")]
	peak := r.Stages[len(r.Stages)-1]
	for _, want := range []string{"verdict: " + text(r.Verdict.Text), "peak aggregate " + f1(peak.AggregateTokS) + " tok/s at " + analyze.Label(peak.Stage)} {
		if !strings.Contains(box, want) {
			t.Errorf("the summary lacks %q:\n%s", want, box)
		}
	}
}

// Percentiles of one run differ by marker and by the label at the line's
// end, not by dash alone; runs differ by colour and marker.
func TestLatencyMarkersAndLabels(t *testing.T) {
	t.Parallel()
	a, b := run(), run()
	a.File, b.File = "a.jsonl", "b.jsonl"
	for _, tc := range []struct {
		name string
		p    *page
	}{{"one run", &page{runs: []named{{"a", a}}}}, {"two runs", &page{runs: []named{{"a", a}, {"b", b}}}}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, c := range tc.p.latencies() {
				seen := map[string]string{}
				for _, se := range c.Series {
					k := se.Color + " " + or(se.Marker, "circle")
					if prev, ok := seen[k]; ok {
						t.Errorf("%s: %q and %q differ by dash alone", c.Name, prev, se.Name)
					}
					seen[k] = se.Name
				}
				var labels []string
				for _, sh := range c.layout().shapes {
					if sh.class == "end-label" {
						labels = append(labels, sh.text)
					}
				}
				if len(labels) != len(c.Series) {
					t.Errorf("%s: end labels %v for %d series", c.Name, labels, len(c.Series))
				}
			}
		})
	}
}

// Every Pareto point carries its level as a label, in the SVG and in the
// scene the png rasterizes.
func TestParetoLabels(t *testing.T) {
	t.Parallel()
	a, b := run(), run()
	a.File, b.File = "a.jsonl", "b.jsonl"
	p := &page{runs: []named{{"a", a}, {"b", b}}}
	sc := p.pareto().layout()
	var points, labels int
	for _, sh := range sc.shapes {
		switch {
		case sh.hasData:
			points++
		case sh.class == "point-label":
			if !regexp.MustCompile(`^C=\d+$`).MatchString(sh.text) {
				t.Errorf("label %q", sh.text)
			}
			labels++
		}
	}
	if points == 0 || labels != points {
		t.Errorf("%d points, %d labels", points, labels)
	}
	var svg strings.Builder
	sc.svg(&svg)
	if n := strings.Count(svg.String(), `class="point-label"`); n != points {
		t.Errorf("the SVG has %d point labels for %d points", n, points)
	}
	if img := sc.raster(); img.Bounds().Dx() != int(chartW*pngScale) {
		t.Errorf("png width %d", img.Bounds().Dx())
	}
}

// compare --format html is an HTML table, not Markdown in a <pre>; the
// summary gives the aggregate ratio per level; printing shows every stage.
func TestCompareHTMLTable(t *testing.T) {
	t.Parallel()
	a, b := run(), run()
	a.File, b.File = "a.jsonl", "b.jsonl"
	c, err := analyze.Compare([]*analyze.Run{keep(a), keep(b)}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Render(&out, "html", c); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	if !strings.Contains(page, `<table class="ab">`) || strings.Contains(page, "| C | metric |") {
		t.Errorf("the A/B is not an HTML table")
	}
	if n := strings.Count(page, "<td class=\"l\">aggregate tok/s</td>"); n != 2 {
		t.Errorf("%d aggregate rows, want one per shared level (2)", n)
	}
	if !regexp.MustCompile(`B / A, aggregate tok/s \(A = a\.jsonl, B = b\.jsonl\): C=1: `).MatchString(page) {
		t.Errorf("the summary lacks the aggregate ratios")
	}
	if !strings.Contains(page, ".stage[hidden]{display:block!important}") {
		t.Errorf("printing does not show every stage")
	}
}
