package analyze

import (
	"slices"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/summary"
)

// Source says that a run's figures were not measured by tokperf but read
// from another tool's result file: which tool, how each of its figures was
// mapped onto tokperf's (its definitions named, since tools disagree on
// ITL and TPOT), and which tokperf figures the file does not have. Those
// are left blank, never guessed: a distribution with N = 0, a percentile
// that is NaN (null in JSON), or a figure named in Blank.
type Source struct {
	Tool   string `json:"tool"`   // vllm, sglang, guidellm, aiperf
	Format string `json:"format"` // e.g. "vLLM bench serve --save-result JSON"
	// Definitions are one sentence per figure mapped: the tool's name
	// and definition, and the tokperf figure it fills.
	Definitions []string `json:"definitions"`
	// Blank are the JSON names of stage figures the file does not have;
	// they read 0 in JSON and are blank in the tables.
	Blank []string `json:"blank"`
}

// Has says whether the file had the stage figure of JSON name key.
func (s *Source) Has(key string) bool { return s == nil || !slices.Contains(s.Blank, key) }

// ForeignRun is the Run of another tool's result file: its stages'
// figures as mapped, the setup fields the file states, and no warnings of
// tokperf's own checks (they read records the file does not hold). The
// scaling verdict is drawn only when every closed-loop stage has the
// per-request decode speed it reads.
func ForeignRun(file string, setup record.Setup, stages []summary.Stage, src *Source) *Run {
	run := &Run{Schema: RunSchema, File: file, Setup: setup, Source: src, Warnings: []Warning{}}
	for i, s := range stages {
		s.Index = i
		if s.Rate > 0 {
			run.OpenLoop = true
		}
		run.Stages = append(run.Stages, Stage{Stage: s})
		run.Integrity.Records += s.Requests
	}
	run.Integrity.Ended = true
	if !run.OpenLoop {
		slices.SortStableFunc(run.Stages, func(a, b Stage) int { return a.Concurrency - b.Concurrency })
	}
	levels := closedLevels(run.Figures())
	if len(levels) > 0 {
		run.Setup.Load.Concurrency = nil
		for _, s := range levels {
			run.Setup.Load.Concurrency = append(run.Setup.Load.Concurrency, s.Concurrency)
		}
	}
	decode := len(levels) >= 2
	for _, s := range levels {
		decode = decode && s.DecodeTokS.N > 0 && s.Concurrency > 0
	}
	if decode {
		v := Scaling(run.Figures())
		run.Verdict = &v
	}
	run.gate()
	return run
}
