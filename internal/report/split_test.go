package report

import (
	"bytes"
	"image/png"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/summary"
)

// The TTFT split is a line in the text, where an unreported part is named
// inside the rest, and a stacked bar per stage in the page and the png,
// each part's hover value its mean, median and share.
func TestTTFTSplitShown(t *testing.T) {
	t.Parallel()
	r := run()
	r.Stages[1].Stage.TTFTSplit = &summary.Split{
		Requests: 4, TTFTMs: 120,
		ClientWait: summary.SplitPart{N: 4, P50Ms: 0.5, MeanMs: 0.5, Share: 0.5 / 120}, Connect: summary.SplitPart{N: 4},
		Prefill: &summary.SplitPart{N: 4, P50Ms: 30, MeanMs: 31, Share: 31.0 / 120},
		Rest:    summary.SplitPart{N: 4, P50Ms: 90, MeanMs: 89, Share: 89.0 / 120},
	}
	line := SplitLine(r.Stages[1].Stage)
	for _, want := range []string{"C=2: where the TTFT went, over 4 requests", "mean 120.0 ms", "prefill p50 30.0 ms (26%)", "rest p50 90.0 ms (74%: delivery both ways, the server's other work, and its queue, which it does not report)"} {
		if !strings.Contains(line, want) {
			t.Errorf("no %q in\n%s", want, line)
		}
	}
	if SplitLine(r.Stages[0].Stage) != "" {
		t.Error("a stage with no split has a line")
	}
	var text bytes.Buffer
	if err := Render(&text, "text", r); err != nil || !strings.Contains(text.String(), line) {
		t.Errorf("the text report lacks the split line (%v)", err)
	}
	var page bytes.Buffer
	if err := Render(&page, "html", r); err != nil {
		t.Fatal(err)
	}
	tip := "C=2: prefill mean 31.0 ms, p50 30.0 ms, 26% of the TTFT (4 of 4 requests reported it)"
	if !strings.Contains(page.String(), `data-chart="ttft-split"`) || !strings.Contains(page.String(), tip) {
		t.Errorf("no ttft-split chart with the bar %q", tip)
	}
	var img bytes.Buffer
	if err := Render(&img, "png", Pick{Chart: "ttft-split", Result: r}); err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(&img); err != nil {
		t.Error(err)
	}
}
