package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
)

// A run with speculative decoding says, per stage, its tokens per verify
// step and a verify step's time, and how to read its speed-up; a run
// without says nothing of it.
func TestSpecLine(t *testing.T) {
	t.Parallel()
	r := run()
	s := &r.Stages[1]
	// One token a chunk, and nothing from the server: no speculation.
	s.ICL, s.ITL = stats.Dist{N: 50, Mean: 6}, stats.Dist{N: 50, Mean: 6}
	s.ChunkSources = map[record.TokenSource]int{record.SourceContinuous: 4}
	if SpecLine(r, s) != "" {
		t.Errorf("a run without speculative decoding: %q", SpecLine(r, s))
	}
	s.ICL, s.ITL = stats.Dist{N: 50, Mean: 15}, stats.Dist{N: 120, Mean: 6}
	r.Setup.Server.Info = map[string]any{"speculative_algorithm": "EAGLE"}
	s.Server = &analyze.ServerReading{SpecLength: 2.4, SpecRate: 0.7}
	want := "C=2: speculative decoding: 2.40 tokens per verify step (server counters, 70% of drafted tokens accepted; 2.50 decode tokens per chunk), a verify step every 14.40 ms; its speed-up is read against a run without it: tokperf compare BASE " + r.File
	if got := SpecLine(r, s); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	var b bytes.Buffer
	if err := Render(&b, "text", r); err != nil || !strings.Contains(b.String(), want) {
		t.Errorf("the text report lacks the line (%v)", err)
	}
}
