package analyze

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// sweep makes closed-loop stages with the given aggregates and a decode
// speed per request of aggregate / C.
func sweep(cs []int, agg func(c int) float64) []summary.Stage {
	var out []summary.Stage
	for _, c := range cs {
		a := agg(c)
		out = append(out, summary.Stage{Concurrency: c, OK: 1, AggregateTokS: a, DecodeTokS: stats.Dist{Mean: a / float64(c)}})
	}
	return out
}

func TestScalingVerdicts(t *testing.T) {
	t.Parallel()
	seed := map[int]float64{1: 172.2, 4: 542.2, 16: 1646.7, 32: 2156.4}
	capped := func(c int) float64 { return 100 * float64(min(c, 24)) }
	var golden strings.Builder
	for _, tc := range []struct {
		name string
		cs   []int
		agg  func(c int) float64
		kind string
		knee [2]int // the knee must fall in this range (0, 0: none)
	}{
		{"the seed article", []int{1, 4, 16, 32}, func(c int) float64 { return seed[c] }, "rising", [2]int{0, 32}},
		{"flat at the end", []int{16, 32}, func(c int) float64 { return map[int]float64{16: 2000, 32: 2100}[c] }, "saturated", [2]int{0, 0}},
		{"fell", []int{16, 32}, func(c int) float64 { return map[int]float64{16: 2000, 32: 1800}[c] }, "past_peak", [2]int{0, 0}},
		{"a server capped at 24", []int{1, 2, 4, 8, 16, 32, 45, 64}, capped, "saturated", [2]int{12, 48}},
		{"linear", []int{1, 2, 4, 8}, func(c int) float64 { return 100 * float64(c) }, "rising", [2]int{0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Scaling(sweep(tc.cs, tc.agg))
			if v.Kind != tc.kind {
				t.Errorf("kind %s, want %s: %s", v.Kind, tc.kind, v.Text)
			}
			if v.Knee < tc.knee[0] || v.Knee > tc.knee[1] {
				t.Errorf("knee at %d, want within %v", v.Knee, tc.knee)
			}
			fmt.Fprintf(&golden, "%s\nverdict: %s\n%s\n\n", tc.name, v.Text, strings.Join(stepTexts(v.Steps), "\n"))
		})
	}
	if *update {
		os.WriteFile("testdata/verdicts.golden", []byte(golden.String()), 0o644)
	}
	want, err := os.ReadFile("testdata/verdicts.golden")
	if err != nil {
		t.Fatal(err)
	}
	if golden.String() != string(want) {
		t.Errorf("verdicts changed:\n--- got\n%s\n--- want\n%s", golden.String(), want)
	}
}

func TestWarnings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		stage summary.Stage
		ctx   Asked
		check string
	}{
		// Estimated counts (one per chunk) cannot show a short output: the
		// warning says so instead of accusing the server.
		{"short by an estimate", summary.Stage{Concurrency: 1, OK: 4, Requests: 4, MeanOutputTokens: 77, EffectiveConcurrency: 1, OutputSources: map[record.TokenSource]int{record.SourceChunks: 4}}, Asked{OutputTokens: 150, IgnoreEOS: true}, "token_source,short_output"},
		{"short output", summary.Stage{Concurrency: 1, OK: 4, Requests: 4, MeanOutputTokens: 500, EffectiveConcurrency: 1}, Asked{OutputTokens: 1000, IgnoreEOS: true}, "short_output"},
		{"cached prompts", summary.Stage{Concurrency: 1, OK: 4, Requests: 4, PromptTokens: 1000, CachedTokens: 500, EffectiveConcurrency: 1}, Asked{}, "prefix_cache"},
		// BOS and the first block (2%), or a shared prefix asked for, or a
		// chat template's opening (7%) are shared by construction: no alarm.
		{"the first block", summary.Stage{Concurrency: 1, OK: 4, Requests: 4, PromptTokens: 2048, CachedTokens: 4 * 10, EffectiveConcurrency: 1}, Asked{}, ""},
		{"a shared prefix asked for", summary.Stage{Concurrency: 1, OK: 4, Requests: 4, PromptTokens: 2048, CachedTokens: 4 * 256, EffectiveConcurrency: 1}, Asked{SharedPrefix: 256}, ""},
		{"a chat template's opening", summary.Stage{Concurrency: 1, OK: 4, Requests: 4, PromptTokens: 2540, CachedTokens: 4 * 44, EffectiveConcurrency: 1}, Asked{Chat: true}, ""},
		{"more than the template", summary.Stage{Concurrency: 1, OK: 4, Requests: 4, PromptTokens: 2540, CachedTokens: 2524, EffectiveConcurrency: 1}, Asked{Chat: true}, "prefix_cache"},
		{"reasoning only", summary.Stage{Concurrency: 1, OK: 4, Requests: 4, NoContent: 2, EffectiveConcurrency: 1}, Asked{}, "no_content"},
		// The client's wait against the slots' time: 1 ms before 40 ms
		// requests is 2.4% of the load (a bottleneck), 0.3 ms is 0.7%
		// (not), and a p99 of 8 ms matters not when the mean is small.
		{"late client", summary.Stage{Concurrency: 1, OK: 4, Requests: 4, ClientWait: stats.Dist{N: 4, P99: 3, Mean: 1}, E2E: stats.Dist{Mean: 40}, EffectiveConcurrency: 1}, Asked{}, "client_lag"},
		{"client keeps up", summary.Stage{Concurrency: 1, OK: 4, Requests: 4, ClientWait: stats.Dist{N: 4, P99: 0.9, Mean: 0.3}, E2E: stats.Dist{Mean: 40}, EffectiveConcurrency: 1}, Asked{}, ""},
		{"a rare wait", summary.Stage{Concurrency: 2, OK: 4, Requests: 4, ClientWait: stats.Dist{N: 4, P99: 8.4, Mean: 0.62}, E2E: stats.Dist{Mean: 270}, EffectiveConcurrency: 2}, Asked{}, ""},
		// Opening connections is not the client's wait: a queue of 5 ms
		// that was all connect time raises nothing.
		{"connection setup", summary.Stage{Concurrency: 32, OK: 32, Requests: 32, ClientQueue: stats.Dist{N: 32, P99: 5, Mean: 5}, ClientWait: stats.Dist{N: 32}, E2E: stats.Dist{Mean: 40}, EffectiveConcurrency: 32}, Asked{}, ""},
		{"buffered chunks", summary.Stage{Concurrency: 1, OK: 4, Requests: 4, BufferedShare: 0.3, EffectiveConcurrency: 1}, Asked{}, "client_lag"},
		{"capped", summary.Stage{Concurrency: 32, OK: 4, Requests: 4, EffectiveConcurrency: 20}, Asked{}, "effective_concurrency"},
		{"estimated tokens", summary.Stage{Concurrency: 1, OK: 4, Requests: 4, EffectiveConcurrency: 1, OutputSources: map[record.TokenSource]int{record.SourceChunks: 4}}, Asked{}, "token_source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := Warnings([]summary.Stage{tc.stage}, tc.ctx)
			if tc.check == "" {
				if len(ws) != 0 {
					t.Errorf("warnings %v, want none", ws)
				}
				return
			}
			var checks []string
			for _, w := range ws {
				checks = append(checks, w.Check)
			}
			if strings.Join(checks, ",") != tc.check {
				t.Errorf("warnings %v, want exactly %s", ws, tc.check)
			}
			for _, w := range ws {
				if w.Check == "short_output" && len(checks) > 1 && strings.Contains(w.Text, "did not honour") {
					t.Errorf("an estimate accuses the server: %s", w)
				}
			}
		})
	}
}

func stepTexts(steps []Step) []string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Text)
	}
	return out
}

// A flat aggregate while per-request decode speeds up says "rose", never
// "fell -7%".
func TestVerdictDecodeRose(t *testing.T) {
	t.Parallel()
	v := Scaling([]summary.Stage{
		{Concurrency: 16, OK: 1, AggregateTokS: 2000, DecodeTokS: stats.Dist{Mean: 420.3}},
		{Concurrency: 32, OK: 1, AggregateTokS: 2050, DecodeTokS: stats.Dist{Mean: 451.7}},
	})
	if v.Kind != "saturated" || !strings.Contains(v.Text, "decode tok/s per request rose 7% (420.3 → 451.7)") {
		t.Errorf("%s: %s", v.Kind, v.Text)
	}
}

// Levels where every request failed are no scaling data: the verdict says
// so instead of "one concurrency level", and no warning divides by them.
func TestAllFailedLevels(t *testing.T) {
	t.Parallel()
	failed := func(c int) summary.Stage {
		nan := math.NaN()
		return summary.Stage{Concurrency: c, Requests: 4, Errors: map[record.Status]int{record.StatusHTTPError: 4},
			ClientQueue: stats.Dist{N: 4, Mean: 3, P99: 5}, E2E: stats.Dist{Mean: nan}, EffectiveConcurrency: float64(c)}
	}
	stages := []summary.Stage{failed(1), failed(4), failed(16)}
	if v := Scaling(stages); v.Kind != "none" || !strings.Contains(v.Text, "0 of 3 levels finished a request") {
		t.Errorf("%s: %s", v.Kind, v.Text)
	}
	for _, w := range Warnings(stages, Asked{}) {
		if strings.Contains(w.Text, "NaN") {
			t.Errorf("warning with NaN: %s", w)
		}
	}
}

// A model named with its quantization is the same base model as one named
// without it: the model row is the same, the quantization row says what
// the name told and what the other side does not say.
func TestFairnessModelWithQuantizationInItsName(t *testing.T) {
	t.Parallel()
	fields, _ := Fairness(Side{Model: "Qwen3.5-397B-A17B-NVFP4"}, Side{Model: "Qwen3.5-397B-A17B (as quoted)"})
	got := map[string]Field{}
	for _, f := range fields {
		got[f.Name] = f
	}
	if m := got["model"]; m.Verdict != "same" || m.A != "Qwen3.5-397B-A17B-NVFP4" {
		t.Errorf("model: %+v", m)
	}
	if q := got["quantization"]; q.Verdict != "unknown" || q.A != "nvfp4 (from the model's name)" {
		t.Errorf("quantization: %+v", q)
	}
	fields, _ = Fairness(Side{Model: "m-FP8"}, Side{Model: "m", Quantization: "nvfp4"})
	for _, f := range fields {
		if f.Name == "quantization" && f.Verdict != "different" {
			t.Errorf("fp8 from the name against a stated nvfp4: %+v", f)
		}
	}
}
