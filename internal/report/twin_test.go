package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/analyze"
)

func twinModel() *analyze.Twin {
	fig := func(name string, m, t float64) analyze.TwinFigure {
		return analyze.TwinFigure{Name: name, Measured: m, Twin: t, Error: t/m - 1}
	}
	return &analyze.Twin{Schema: analyze.TwinSchema, File: "r.jsonl", Model: "m", Engine: "vllm",
		Levels: []analyze.TwinLevel{
			{Concurrency: 1, Requests: 100, Figures: []analyze.TwinFigure{fig("aggregate tok/s", 140, 141), fig("TTFT p50 ms", 7, 7.1)}},
			{Concurrency: 16, Requests: 112, Figures: []analyze.TwinFigure{fig("aggregate tok/s", 2100, 2090), fig("TTFT p50 ms", 80, 79)}},
		},
		Params: []analyze.TwinParam{{Name: "decode.table[batch 1].step_ms", Unit: "ms", Value: 7, SE: 0.02, Pinned: true, From: "decode tok/s at C=1"}},
		Predicted: []analyze.Predicted{{Concurrency: 32, Requests: 128, Beyond: true,
			Figures:  []analyze.PredictedFigure{{Name: "aggregate tok/s", Estimate: analyze.Estimate{Value: 4000, Lo: 3900, Hi: 4100}}, {Name: "TTFT p50 ms", Estimate: analyze.Estimate{Value: 150, Lo: 145, Hi: 155}}},
			Measured: []float64{3950, 160}}},
	}
}

// shapedTwin is twinModel with the growths its C=32 spans.
func shapedTwin() *analyze.Twin {
	m := twinModel()
	m.Shape = &analyze.TwinShape{FromBatch: 16, FromConcurrency: 16, Growths: []string{"straight", "power", "knee"}, Text: "past batch 16 (C=16) the step time's growth is not pinned"}
	m.Predicted[0].Figures[0].Growths = []float64{4000, 3990, 2080}
	m.Predicted[0].Figures[0].Lo = 2000
	return m
}

// The twin renders in every format: text says which prediction missed,
// csv has a row per fitted and predicted level, html draws its chart.
func TestTwinFormats(t *testing.T) {
	t.Parallel()
	m := twinModel()
	var b bytes.Buffer
	if err := Render(&b, "text", m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fitted to C=1, 16", "4000 (3900–4100) measured 3950, +1.3% inside", "150 (145–155) measured 160, -6.2% outside", "beyond the largest measured level"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := Render(&b, "csv", m); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 4 || rows[3][0] != "predicted" || rows[3][1] != "32" {
		t.Errorf("csv %v %v", rows, err)
	}
	b.Reset()
	if err := Render(&b, "html", m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `data-chart="twin"`) || !strings.Contains(b.String(), "C=32 predicted 4000 tok/s (3900–4100)") {
		t.Errorf("html lacks the twin's chart")
	}
	if err := Render(&bytes.Buffer{}, "png", m); err != nil {
		t.Errorf("png: %v", err)
	}
}

// Past the fitted levels the text says the interval is the envelope of
// the step's growths and gives the figure under each; the html chart's
// interval is the envelope.
func TestTwinShowsTheEnvelope(t *testing.T) {
	t.Parallel()
	m := shapedTwin()
	var b bytes.Buffer
	if err := Render(&b, "text", m); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"4000 (2000–4100) measured 3950", "envelope of the step time growing past batch 16 straight, power or knee", "aggregate tok/s under each growth: C=32 straight 4000, power 3990, knee 2080"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := Render(&b, "html", m); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "C=32 predicted 4000 tok/s (2000–4100)") || !strings.Contains(b.String(), "envelope of the step time") {
		t.Errorf("html lacks the envelope:\n%s", b.String())
	}
}

// A twin fitted to a level that was not measured validly says its
// predictions are not judged, in text, markdown and html.
func TestTwinWithheld(t *testing.T) {
	t.Parallel()
	m := twinModel()
	m.Basis = &analyze.Basis{Stages: []string{"C=1", "C=16"}, Withheld: "C=16 was measured on a starved simulator (20.5% of its steps late); rerun on a quieter machine"}
	want := "predictions not judged: C=16 was measured on a starved simulator"
	for _, format := range []string{"text", "markdown", "html"} {
		var b bytes.Buffer
		if err := Render(&b, format, m); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s lacks %q:\n%s", format, want, b.String())
		}
	}
}
