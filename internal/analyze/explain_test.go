package analyze

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// explainRecs are two requests whose figures differ under each of vLLM's
// definitions, worked by hand below: the first opened a connection (10
// ms), its first chunk holds 3 tokens and its stream ends 5 ms after its
// last token.
func explainRecs() []record.Record {
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	r1 := record.Record{ID: 1, Concurrency: 2, Scheduled: ms(85), Sent: ms(100), Connect: ms(10), FirstToken: ms(150), LastToken: ms(200), Done: ms(205),
		Chunks: []record.Chunk{{At: ms(150), Tokens: 3}, {At: ms(170), Tokens: 2}, {At: ms(200), Tokens: 1}}, OutputTokens: 6, Status: record.StatusOK}
	r2 := record.Record{ID: 2, Concurrency: 2, Scheduled: ms(300), Sent: ms(300), FirstToken: ms(320), LastToken: ms(360), Done: ms(360),
		Chunks: []record.Chunk{{At: ms(320), Tokens: 1}, {At: ms(330), Tokens: 1}, {At: ms(360), Tokens: 2}}, OutputTokens: 4, Status: record.StatusOK}
	return []record.Record{r1, r2}
}

// Each of vLLM's definitions moves the figures by what it changes, worked
// by hand; a peer whose figures are those leaves nothing unexplained.
func TestExplainStepsByHand(t *testing.T) {
	t.Parallel()
	d := func(mean, p50, p99 float64) stats.Dist { return stats.Dist{N: 2, Mean: mean, P50: p50, P99: p99} }
	// vLLM's figures of the two requests: TTFT 60 and 20 (its clock starts
	// before the connection); TPOT (205 − 150)/5 = 11 and 40/3; ITL the
	// chunk gaps 20, 30, 10, 30; E2E 115 and 60; numpy's percentiles.
	st := summary.Stage{Concurrency: 2, OK: 2, Requests: 2, OutputTokens: 10, PromptTokens: 0,
		TTFT: d(40, 40, 59.6), TPOT: d((11+40.0/3)/2, (11+40.0/3)/2, 11+0.99*(40.0/3-11)), ICL: stats.Dist{N: 4, Mean: 22.5, P50: 25, P99: 30},
		E2E: d(87.5, 87.5, 60+0.99*55), AggregateTokS: 10 / 0.275, RequestsPerS: 2 / 0.275}
	peer := ForeignRun("vllm.json", record.Setup{}, []summary.Stage{st}, &Source{Tool: "vllm", Blank: []string{"prompt_tokens"}})
	e, err := Explain(peer, 0, explainRecs(), "mine.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	step := func(fig, cause string) []float64 {
		for _, f := range e.Figures {
			for _, s := range f.Steps {
				if f.Figure == fig && s.Cause == cause {
					return s.Delta
				}
			}
		}
		t.Fatalf("no step %s of %s", cause, fig)
		return nil
	}
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-9 }
	for _, c := range []struct {
		fig, cause string
		stat       int
		want       float64
	}{
		{"TTFT", "TTFT anchor", 0, 5},                                // (60 + 20)/2 − (50 + 20)/2
		{"TTFT", "percentile method", 2, 59.6 - 60},                  // nearest rank 60 → 20 + 0.99 × 40
		{"TPOT", "end of a request", 0, 5.0 / 3 / 2},                 // (205 − 150)/3 − (200 − 150)/3, over 2 requests
		{"TPOT", "TPOT formula", 0, (11 - 55.0/3) / 2},               // 55/5 against 55/3
		{"ITL", "ITL definition", 0, 22.5 - 15},                      // per chunk 90/4 against per token (2×10 + 30 + 10 + 2×15)/6
		{"E2E", "end of a request", 0, 2.5},                          // 5 ms more for one of 2
		{"output tok/s", "throughput window", 0, 10/0.275 - 10/0.26}, // from scheduled 85 ms, not sent 100 ms
	} {
		if got := step(c.fig, c.cause)[c.stat]; !near(got, c.want) {
			t.Errorf("%s %s: %.6g, want %.6g", c.fig, c.cause, got, c.want)
		}
	}
	for _, f := range e.Figures {
		for i, u := range f.Unexplained {
			if math.Abs(u) > 1e-6 || f.Named[i] < 1 {
				t.Errorf("%s %s: %.3g unexplained (%.3f named)", f.Figure, f.Stats[i], u, f.Named[i])
			}
		}
	}
	if !strings.HasPrefix(e.Reading, "Most of the difference is definition, the percentile method") { // two requests: p50 and p99 far apart
		t.Errorf("reading %q", e.Reading)
	}
}

// inference-perf's TPOT ends at the last token, so its steps are the
// formula and the percentile, no end of a request; its window starts at
// the first request's start, its connection included. By hand, of the two
// requests: TTFT 60 and 20; TPOT (200 − 150)/5 = 10 and 40/3 against
// tokperf's 50/3 and 40/3; chunk gaps 20, 30, 10, 30; E2E to the stream's
// end 115 and 60; window 90 → 360 ms.
func TestExplainInferencePerfByHand(t *testing.T) {
	t.Parallel()
	d := func(mean, p50, p99 float64) stats.Dist { return stats.Dist{N: 2, Mean: mean, P50: p50, P99: p99} }
	st := summary.Stage{Concurrency: 2, OK: 2, Requests: 2, OutputTokens: 10,
		TTFT: d(40, 40, 59.6), TPOT: d((10+40.0/3)/2, (10+40.0/3)/2, 10+0.99*(40.0/3-10)), ICL: stats.Dist{N: 4, Mean: 22.5, P50: 25, P99: 30},
		E2E: d(87.5, 87.5, 60+0.99*55), AggregateTokS: 10 / 0.27, RequestsPerS: 2 / 0.27}
	peer := ForeignRun("stage_0_lifecycle_metrics.json", record.Setup{}, []summary.Stage{st}, &Source{Tool: "inference-perf", Blank: []string{"prompt_tokens"}})
	e, err := Explain(peer, 0, explainRecs(), "mine.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range e.Figures {
		var causes []string
		for _, s := range f.Steps {
			causes = append(causes, s.Cause)
		}
		if f.Figure == "TPOT" {
			if got := strings.Join(causes, ", "); got != "TPOT formula, percentile method" {
				t.Errorf("TPOT's steps %s, want the formula and the percentile", got)
			}
			if got, want := f.Steps[0].Delta[0], (10-50.0/3)/2; math.Abs(got-want) > 1e-9 {
				t.Errorf("TPOT formula %.6g, want %.6g", got, want)
			}
		}
		for i, u := range f.Unexplained {
			if math.Abs(u) > 1e-6 || f.Named[i] < 1 {
				t.Errorf("%s %s: %.3g unexplained (%.3f named)", f.Figure, f.Stats[i], u, f.Named[i])
			}
		}
	}
	if len(e.Figures) != 6 || e.PeerName != "inference-perf" {
		t.Errorf("%d figures of %s, want 6 of inference-perf", len(e.Figures), e.PeerName)
	}
}

// GuideLLM's percentile sums probabilities of 1/n in floating point: at
// n = 60 thirty of them fall short of 0.5, so its median is the 31st value
// where nearest rank gives the 30th.
func TestGuideLLMMedianRoundsShort(t *testing.T) {
	t.Parallel()
	var xs []float64
	for i := range 60 {
		xs = append(xs, float64(i+1))
	}
	if got := summarize(xs, nil, nearestRank)[1]; got != 30 {
		t.Errorf("nearest rank p50 %v, want 30", got)
	}
	if got := summarize(xs, nil, cdf)[1]; got != 31 {
		t.Errorf("GuideLLM's p50 %v, want 31", got)
	}
	if got := summarize(xs, nil, linear)[1]; got != 30.5 {
		t.Errorf("numpy's p50 %v, want 30.5", got)
	}
}

// The workload estimate: a peer whose requests were 10 tokens longer is
// explained for E2E by 10 decode steps at the peer's TPOT; explain
// refuses a tokperf file as the peer.
func TestExplainLengthsAndRefusals(t *testing.T) {
	t.Parallel()
	st := summary.Stage{Concurrency: 2, OK: 2, Requests: 2, OutputTokens: 30, E2E: stats.Dist{N: 2, Mean: 500, P50: 500, P99: 500}}
	peer := ForeignRun("vllm.json", record.Setup{}, []summary.Stage{st}, &Source{Tool: "vllm", Blank: []string{"aggregate_tok_s", "requests_per_s"}})
	e, err := Explain(peer, 0, explainRecs(), "mine.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, f := range e.Figures {
		for _, s := range f.Steps {
			if f.Figure == "E2E" && s.Cause == "output lengths" {
				found = true
				// 10 tokens × the mean of 11 and 40/3 ms.
				if want := 10 * (11 + 40.0/3) / 2; math.Abs(s.Delta[0]-want) > 1e-9 {
					t.Errorf("lengths %.4g ms, want %.4g", s.Delta[0], want)
				}
			}
		}
	}
	if !found {
		t.Errorf("no output lengths step: %+v", e.Figures)
	}
	if w := e.Workload[3]; w.Name != "output tokens, mean" || !w.Differs {
		t.Errorf("workload %+v", w)
	}
	if _, err := Explain(&Run{File: "mine.jsonl"}, 0, explainRecs(), "b.jsonl"); err == nil || !strings.Contains(err.Error(), "is a tokperf result file") {
		t.Errorf("a tokperf file as the peer: %v", err)
	}
}
