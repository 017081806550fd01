package twin

import (
	"fmt"
	"math"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// TablePoint is one level of a published table: its aggregate and
// per-request decode tok/s and, where given, the tokens it generated.
type TablePoint struct {
	Concurrency   int
	AggregateTokS float64
	DecodeTokS    float64
	Tokens        int
}

// Table is a published result (a baseline) the twin can be fitted to
// when no result file exists: its levels' figures and what it says of
// its workload.
type Table struct {
	Name        string
	Setup       record.Setup // model, engine, GPUs; Workload.OutputTokens its maximum output
	InputTokens int          // 0: not given (128 is assumed)
	Points      []TablePoint
}

// tableSpread is the relative spread a table's figures are weighted by:
// a table carries none of its own.
const tableSpread = 0.02

// assumedPrompt is the prompt length assumed when a table gives none.
const assumedPrompt = 128

// FromTable makes a twin's input of a table: each level's requests as
// many as its tokens need at the maximum output (or two per slot when it
// gives no tokens), each of the level's mean output, with the table's
// prompt length or 128 tokens. What is assumed is noted.
func FromTable(t Table) (Input, error) {
	in := Input{File: t.Name, Setup: t.Setup, Spread: tableSpread}
	prompt := t.InputTokens
	if prompt <= 0 {
		prompt = assumedPrompt
		in.Notes = append(in.Notes, fmt.Sprintf("the table gives no prompt length: %d tokens assumed, so the prefill and overhead split is a guess", prompt))
	}
	maxOut := t.Setup.Workload.OutputTokens
	id := 0
	for i, p := range t.Points {
		if p.Concurrency < 1 || !(p.AggregateTokS > 0) || !(p.DecodeTokS > 0) {
			return Input{}, fmt.Errorf("%s: level %d needs a concurrency, an aggregate and a per-request decode tok/s to be fitted", t.Name, i+1)
		}
		n := 2 * p.Concurrency
		if p.Tokens > 0 && maxOut > 0 {
			n = max(int(math.Ceil(float64(p.Tokens)/float64(maxOut))), p.Concurrency)
		}
		out := 256
		if p.Tokens > 0 {
			out = max(p.Tokens/n, 1)
		}
		st := analyze.Stage{Stage: summary.Stage{Index: i, Concurrency: p.Concurrency, Requests: n, OK: n, AggregateTokS: p.AggregateTokS,
			DecodeTokS: stats.Dist{N: n, Mean: p.DecodeTokS}, TPOT: stats.Dist{N: n, P50: 1e3 / p.DecodeTokS}, TTFT: stats.Dist{Mean: math.NaN(), P50: math.NaN()}, OutputTokens: n * out, PromptTokens: n * prompt}}
		in.Stages = append(in.Stages, st)
		for range n {
			in.Requests = append(in.Requests, Request{Stage: i, ID: id, OK: true, Prompt: prompt, Output: out})
			id++
		}
		in.Notes = append(in.Notes, fmt.Sprintf("C=%d: %d requests of %d output tokens assumed (the table's %d tokens at up to %d each)", p.Concurrency, n, out, p.Tokens, maxOut))
	}
	if maxOut == 0 {
		in.Setup.Workload.OutputTokens = 256
	}
	in.Setup.Load.Concurrency = nil
	for _, p := range t.Points {
		in.Setup.Load.Concurrency = append(in.Setup.Load.Concurrency, p.Concurrency)
	}
	return in, nil
}
