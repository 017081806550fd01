package analyze

import (
	"math"
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
	// they are null in JSON and blank in the tables.
	Blank []string `json:"blank"`
	// MeanLengths says the setup's input and output tokens are the file's
	// totals over its completed requests, not lengths it asked for.
	MeanLengths bool `json:"mean_lengths,omitempty"`
}

// Has says whether the file had the stage figure of JSON name key.
func (s *Source) Has(key string) bool { return s == nil || !slices.Contains(s.Blank, key) }

// ForeignRun is the Run of another tool's result file: its stages'
// figures as mapped, the setup fields the file states, and no warnings of
// tokperf's own checks (they read records the file does not hold). The
// scaling verdict is drawn only when every closed-loop stage has the
// per-request decode speed it reads.
func ForeignRun(file string, setup record.Setup, stages []summary.Stage, src *Source) *Run {
	return ForeignRunSamples(file, setup, stages, nil, src)
}

// ForeignRunSamples is ForeignRun for a file that also holds per-request
// values: samples[i] (nil where it has none) are stage i's, for compare.
func ForeignRunSamples(file string, setup record.Setup, stages []summary.Stage, samples []*Samples, src *Source) *Run {
	run := &Run{Schema: RunSchema, File: file, Setup: setup, Source: src, Warnings: []Warning{}}
	for i, s := range stages {
		s.Index = i
		if s.Rate > 0 {
			run.OpenLoop = true
		}
		st := Stage{Stage: s}
		if i < len(samples) {
			st.samples = samples[i]
		}
		run.Stages = append(run.Stages, st)
		run.Integrity.Records += s.Requests
	}
	run.Integrity.Ended = true
	lengthsFromTotals(run)
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

// lengthsFromTotals sets the setup's prompt and output lengths the file
// does not state to its totals over its completed requests (means; the
// source's definitions say so).
func lengthsFromTotals(run *Run) {
	var ok, in, out int
	for _, s := range run.Stages {
		ok, in, out = ok+s.OK, in+s.PromptTokens, out+s.OutputTokens
	}
	w := &run.Setup.Workload
	if ok == 0 || (w.InputTokens > 0 && w.OutputTokens > 0) {
		return
	}
	said := false
	if w.InputTokens == 0 && in > 0 && run.Source.Has("prompt_tokens") {
		w.InputTokens, said = int(math.Round(float64(in)/float64(ok))), true
	}
	if w.OutputTokens == 0 && out > 0 && run.Source.Has("output_tokens") {
		w.OutputTokens, said = int(math.Round(float64(out)/float64(ok))), true
	}
	if said && run.Source != nil {
		run.Source.Definitions = append(run.Source.Definitions, "the setup's prompt and output lengths are the file's token totals over its completed requests (means), not lengths it asked for")
		run.Source.MeanLengths = true
	}
}
