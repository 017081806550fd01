// Package analyze reads stage figures and says what they mean: the
// warnings of docs/METRICS.md §5 that a run can compute, and the verdict on
// scaling across concurrency levels, always with the numbers behind it.
//
//	ws := analyze.Warnings(stages, analyze.Context{OutputTokens: 1000, IgnoreEOS: true})
//	v := analyze.Scaling(stages)
package analyze

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/summary"
)

// Context is what the run asked for, to judge what it got.
type Context struct {
	OutputTokens int  // requested per request
	IgnoreEOS    bool // asked the server to ignore EOS
	OpenLoop     bool
	Simulated    bool // the embedded simulator shared the client's CPUs
}

// Warning is one check that failed, for one stage or for the run.
type Warning struct {
	Stage string `json:"stage,omitempty"` // "C=32", or empty for the run
	Check string `json:"check"`           // token_source, short_output, client_lag, ...
	Text  string `json:"text"`
}

func (w Warning) String() string {
	if w.Stage == "" {
		return w.Text
	}
	return w.Stage + ": " + w.Text
}

// Label names a stage the way the table does.
func Label(s summary.Stage) string {
	if s.Rate > 0 {
		return fmt.Sprintf("rate=%g/s", s.Rate)
	}
	return fmt.Sprintf("C=%d", s.Concurrency)
}

// Warnings runs the checks on each stage.
func Warnings(stages []summary.Stage, c Context) []Warning {
	var out []Warning
	for _, s := range stages {
		add := func(check, format string, args ...any) {
			out = append(out, Warning{Stage: Label(s), Check: check, Text: fmt.Sprintf(format, args...)})
		}
		if s.Requests == 0 {
			add("empty", "no measured request finished")
			continue
		}
		if n := errorsOf(s); n > 0 {
			add("errors", "%d of %d requests failed (%s); figures use the %d that finished ok", n, s.Requests, errorList(s), s.OK)
		}
		if s.Cancelled > 0 {
			add("cancelled", "%d requests were cancelled by the interrupt and are left out", s.Cancelled)
		}
		if n := s.OutputSources[record.SourceChunks] + s.OutputSources[record.SourceNone]; n > 0 {
			add("token_source", "output tokens of %d of %d requests are estimated as one per chunk: the server sent no usage", n, s.OK)
		} else if n := s.ChunkSources[record.SourceChunks]; n > 0 && math.Abs(s.TokensPerChunk-1) > 0.02 {
			add("token_source", "tokens per chunk are unknown for %d requests (no per-chunk counts) and assumed 1, but the server's totals give %.2f per chunk: ITL is per chunk there", n, s.TokensPerChunk)
		}
		if c.IgnoreEOS && c.OutputTokens > 0 && s.OK > 0 && s.MeanOutputTokens < 0.9*float64(c.OutputTokens) {
			add("short_output", "mean output %.0f tokens is %.0f%% of the %d asked: the server did not honour ignore_eos, so per-request figures cover shorter outputs", s.MeanOutputTokens, 100*s.MeanOutputTokens/float64(c.OutputTokens), c.OutputTokens)
		}
		shared := ""
		if c.Simulated {
			shared = " (here the embedded simulator shares the client's CPUs)"
		}
		if c.OpenLoop {
			if s.Late > 0 {
				add("client_lag", "%d of %d requests were sent more than 1 ms behind schedule (client queue p99 %.1f ms): the client, not the server, may be the bottleneck%s, or the concurrency cap was reached", s.Late, s.Requests, s.ClientQueue.P99, shared)
			}
		} else if s.ClientQueue.P99 > 1 {
			add("client_lag", "client queue p99 is %.1f ms (over 1 ms): the client, not the server, may be the bottleneck%s; TTFT starts when the request is sent, so it excludes this wait", s.ClientQueue.P99, shared)
		}
		if s.Concurrency > 0 && s.EffectiveConcurrency < 0.9*float64(s.Concurrency) {
			add("effective_concurrency", "effective concurrency %.1f is %.0f%% of the target %d (the server caps running requests, requests fail fast, or the stage is too short for its ramp and drain)", s.EffectiveConcurrency, 100*s.EffectiveConcurrency/float64(s.Concurrency), s.Concurrency)
		}
		if !math.IsNaN(s.SteadyTokS) && s.SteadyTokS > 0 {
			if d := s.AggregateTokS/s.SteadyTokS - 1; math.Abs(d) > 0.10 {
				add("drain_tail", "aggregate %.1f tok/s is %+.0f%% off the steady state %.1f tok/s: ramp-up and the drain of the last requests weigh on the window; more requests per level shrink it", s.AggregateTokS, 100*d, s.SteadyTokS)
			}
		}
	}
	return out
}

func errorsOf(s summary.Stage) int {
	n := 0
	for _, v := range s.Errors {
		n += v
	}
	return n
}

func errorList(s summary.Stage) string {
	var parts []string
	for k, v := range s.Errors {
		parts = append(parts, fmt.Sprintf("%d %s", v, k))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// Verdict is the scaling judgement across concurrency levels.
type Verdict struct {
	Kind string `json:"kind"` // rising, saturated, past_peak, single
	Text string `json:"text"`
}

// Saturation is the growth per doubling of concurrency below which
// throughput counts as flat.
const Saturation = 0.10

// Scaling compares aggregate throughput between the last two closed-loop
// levels (and names the best level when throughput fell).
func Scaling(stages []summary.Stage) Verdict {
	var levels []summary.Stage
	for _, s := range stages {
		if s.Rate == 0 && s.Concurrency > 0 && s.OK > 0 {
			levels = append(levels, s)
		}
	}
	sort.Slice(levels, func(i, j int) bool { return levels[i].Concurrency < levels[j].Concurrency })
	if len(levels) < 2 {
		return Verdict{Kind: "single", Text: "one concurrency level: sweep several (-c 1,4,16,32) to see how throughput scales"}
	}
	a, b := levels[len(levels)-2], levels[len(levels)-1]
	change := b.AggregateTokS/a.AggregateTokS - 1
	perDoubling := math.Pow(b.AggregateTokS/a.AggregateTokS, 1/math.Log2(float64(b.Concurrency)/float64(a.Concurrency))) - 1
	step := fmt.Sprintf("aggregate %+.0f%% from C=%d to C=%d (%.1f → %.1f tok/s, %+.0f%% per doubling)",
		100*change, a.Concurrency, b.Concurrency, a.AggregateTokS, b.AggregateTokS, 100*perDoubling)
	best := levels[0]
	for _, s := range levels {
		if s.AggregateTokS > best.AggregateTokS {
			best = s
		}
	}
	switch {
	case perDoubling >= Saturation:
		return Verdict{Kind: "rising", Text: fmt.Sprintf("%s — still rising, not saturated: try C=%d and C=%d", step, b.Concurrency*3/2, b.Concurrency*2)}
	case best.Concurrency != b.Concurrency && best.AggregateTokS > b.AggregateTokS*1.02:
		return Verdict{Kind: "past_peak", Text: fmt.Sprintf("%s — past the peak: C=%d gave the most (%.1f tok/s)", step, best.Concurrency, best.AggregateTokS)}
	default:
		return Verdict{Kind: "saturated", Text: fmt.Sprintf("%s — saturated: C=%d gives %.0f%% of C=%d's throughput at %.1f vs %.1f decode tok/s per request", step, a.Concurrency, 100*a.AggregateTokS/b.AggregateTokS, b.Concurrency, a.DecodeTokS.Mean, b.DecodeTokS.Mean)}
	}
}
