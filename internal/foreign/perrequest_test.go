package foreign

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/report"
)

// vllm-detailed.json has the shape vLLM's `bench serve --save-result
// --save-detailed` writes (vllm/benchmarks/serve.py): per-request lists
// over all 10 requests sent, request 3 failed (latency and TTFT 0, an
// error). The others: TTFT 100 + 10·i ms, 50 + 10·i output tokens, one per
// chunk every 20 ms. tokperf's figures are computed from those lists.
func TestVLLMPerRequest(t *testing.T) {
	t.Parallel()
	run := read(t, "vllm-detailed.json")
	s := run.Stages[0]
	if s.OK != 9 || s.Requests != 10 {
		t.Fatalf("ok %d of %d, want 9 of 10", s.OK, s.Requests)
	}
	// The nine TTFTs are 100, 110, 120, 140 … 190 ms: nearest-rank p50 is
	// the 5th, 150; the mean 1320/9.
	nearDist(t, "TTFT", s.TTFT, 9, 1320.0/9, 150, 190, 190, 190)
	// Latency = TTFT + (n − 1)·20 ms.
	e2e := func(i int) float64 { return 100 + 10*float64(i) + float64(49+10*i)*20 }
	sum := 0.0
	for _, i := range []int{0, 1, 2, 4, 5, 6, 7, 8, 9} {
		sum += e2e(i)
	}
	nearDist(t, "E2E", s.E2E, 9, sum/9, e2e(5), e2e(9), e2e(9), e2e(9))
	nearDist(t, "TPOT", s.TPOT, 9, 20, 20, 20, 20, 20)
	nearDist(t, "decode", s.DecodeTokS, 9, 50, 50, 50, 50, 50)
	if s.ICL.N != 861 { // Σ (n − 1) over the nine
		t.Errorf("ICL n = %d, want 861 chunk gaps", s.ICL.N)
	}
	near(t, "request tok/s max", s.RequestTokS.Max, 140/(e2e(9)/1e3))
	filled(t, run, "e2e_ms", "decode_tok_s", "request_tok_s", "tpot_ms", "icl_ms")
	x := s.Samples()
	if x == nil || len(x.Pairs) != 9 || len(x.TTFT) != 9 || len(x.Decode) != 9 {
		t.Fatalf("samples for compare: %+v", x)
	}
}

// The default save keeps `latencies` (all requests, a failed one's 0) but
// not the detailed lists: E2E comes from the latencies of the nine that
// succeeded, TTFT from the summary.
func TestVLLMDefaultLatencies(t *testing.T) {
	t.Parallel()
	run := read(t, "vllm-default.json")
	s := run.Stages[0]
	nearDist(t, "E2E", s.E2E, 9, 18540.0/9, 2130, 2970, 2970, 2970)
	near(t, "TTFT p50 (the summary's)", s.TTFT.P50, 150)
	if s.DecodeTokS.N != 0 {
		t.Errorf("decode tok/s without output_lens and ttfts: %+v", s.DecodeTokS)
	}
	blank(t, run, "decode_tok_s", "request_tok_s")
}

// A list whose length disagrees with the requests is an error naming it.
func TestVLLMListLength(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "vllm-detailed.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["ttfts"] = m["ttfts"].([]any)[:4]
	_, err = ReadFrom(bytes.NewReader(mustJSON(t, m)), "x.json")
	if err == nil || !strings.Contains(err.Error(), "ttfts") || !strings.Contains(err.Error(), "x.json:1") {
		t.Fatalf("err = %v, want one naming x.json:1 and ttfts", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// slower is the detailed fixture with every chunk gap 25 ms instead of
// 20: decode 40 tok/s instead of 50.
func slower(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "vllm-detailed.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	ttfts, lats, itls := m["ttfts"].([]any), m["latencies"].([]any), m["itls"].([]any)
	for i := range lats {
		gaps := itls[i].([]any)
		for j := range gaps {
			gaps[j] = 0.025
		}
		if lats[i].(float64) > 0 {
			lats[i] = ttfts[i].(float64) + 0.025*float64(len(gaps))
		}
	}
	m["duration"] = 4.2
	m["output_throughput"] = 870 / 4.2
	path := filepath.Join(t.TempDir(), "slower.json")
	if err := os.WriteFile(path, mustJSON(t, m), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// repeated is a vLLM file with every per-request list k times over (its
// counts too): ten requests at C=4 are two rounds, too few for the blocks
// an A/B's interval rests on (METRICS.md, "Error model").
func repeated(t *testing.T, path string, k int) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for key, v := range m {
		switch x := v.(type) {
		case []any:
			var all []any
			for range k {
				all = append(all, x...)
			}
			m[key] = all
		case float64:
			if key == "num_prompts" || key == "completed" || key == "failed" || strings.HasPrefix(key, "total_") || key == "duration" {
				m[key] = x * float64(k)
			}
		}
	}
	out := filepath.Join(t.TempDir(), "repeated-"+filepath.Base(path))
	if err := os.WriteFile(out, mustJSON(t, m), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// compare tests the per-request lists of two vLLM files as it tests its
// own runs' samples; two files of summaries show their ratios untested.
func TestCompareVLLMFiles(t *testing.T) {
	t.Parallel()
	// Two rounds at C=4 cannot be cut into blocks: shown, not tested.
	short, err := Read(filepath.Join("testdata", "vllm-detailed.json"))
	if err != nil {
		t.Fatal(err)
	}
	shortB, err := Read(slower(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := analyze.Compare([]*analyze.Run{short, shortB}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Stages[0].Metrics[0] {
		if m.Significant || !math.IsNaN(m.Lo) {
			t.Errorf("%s from two rounds a side: %+v, want no interval", m.Name, m)
		}
	}
	if r := c.Stages[0].Resolution[0]; !strings.HasPrefix(r, "resolves nothing: too few requests") {
		t.Errorf("two rounds a side: resolution %q, want that they resolve nothing", r)
	}
	a, err := Read(repeated(t, filepath.Join("testdata", "vllm-detailed.json"), 4))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Read(repeated(t, slower(t), 4))
	if err != nil {
		t.Fatal(err)
	}
	c, err = analyze.Compare([]*analyze.Run{a, b}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]analyze.Metric{}
	for _, m := range c.Stages[0].Metrics[0] {
		byName[m.Name] = m
	}
	if d := byName["decode tok/s p50"]; !d.Significant || d.Ratio < 0.79 || d.Ratio > 0.81 {
		t.Errorf("decode 50 → 40 tok/s: %+v, want significant, ratio 0.80", d)
	}
	if agg := byName["aggregate tok/s"]; !agg.Significant {
		t.Errorf("aggregate 248.6 → 207.1 tok/s from per-request lists: %+v, want significant", agg)
	}
	if ttft := byName["TTFT p50 ms"]; ttft.Significant {
		t.Errorf("the same TTFTs called different: %+v", ttft)
	}

	s1, err := Read(filepath.Join("testdata", "vllm-serve.json"))
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Read(filepath.Join("testdata", "vllm-serve.json"))
	if err != nil {
		t.Fatal(err)
	}
	s2.Stages[0].AggregateTokS *= 1.5
	c, err = analyze.Compare([]*analyze.Run{s1, s2}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	report.Pairs(&out, c)
	if r := c.Stages[0].Resolution[0]; r != "" {
		t.Errorf("summaries compared: resolution %q, want none (nothing to cut into blocks)", r)
	}
	if !strings.Contains(out.String(), "| 16 | aggregate tok/s | 627.2 | 940.8 | 1.50× (not tested) |") {
		t.Errorf("summaries compared: the ratio is not shown untested:\n%s", out.String())
	}
}

// No file yields a 0 it does not hold: every number 0 in the JSON of each
// fixture's run is at a path the fixture states as 0.
func TestNoInventedZeros(t *testing.T) {
	t.Parallel()
	states := map[string][]string{ // fixture → JSON paths whose 0 it holds
		"aiperf-profile_export.jsonl": {"stages.0.stage"},
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.json*"))
	if err != nil || len(files) < 6 {
		t.Fatalf("fixtures: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			run, err := Read(f)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(run)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			held := map[string]bool{}
			for _, p := range states[filepath.Base(f)] {
				held[p] = true
			}
			for i := range run.Stages {
				held[fmt.Sprintf("stages.%d.stage", i)] = true // the stage's index
			}
			walkZeros(v, "", func(path string) {
				if !held[path] {
					t.Errorf("%s: 0, which the file does not hold", path)
				}
			})
		})
	}
}

// walkZeros calls zero with the dotted path of every number 0 in v.
func walkZeros(v any, path string, zero func(string)) {
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			walkZeros(e, join(k), zero)
		}
	case []any:
		for i, e := range x {
			walkZeros(e, join(fmt.Sprint(i)), zero)
		}
	case float64:
		if x == 0 {
			zero(path)
		}
	}
}

// The html page of another tool's file states only what the file holds:
// no setup tokperf would have asked for (prompt lengths of 0, EOS,
// temperature 0), and "—" where the headline has no figure.
func TestForeignHTMLStatesNoZeros(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join("testdata", "*.json*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			run, err := Read(f)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := report.Render(&b, "html", run); err != nil {
				t.Fatal(err)
			}
			page := b.String()
			for _, bad := range []string{"0-token prompts", "up to 0 output tokens", "EOS honoured", "temperature 0", "ignore_eos"} {
				if strings.Contains(page, bad) {
					t.Errorf("the page says %q, which the file does not", bad)
				}
			}
			if !strings.Contains(page, "not in the file") {
				t.Error("the page does not say what the file lacks")
			}
			if strings.Contains(page, "<td>-</td>") {
				t.Error(`a blank headline cell reads "-", want "—"`)
			}
		})
	}
}

// AIPerf's per-request records are compare's samples too.
func TestAIPerfRecordsSamples(t *testing.T) {
	t.Parallel()
	run := read(t, "aiperf-profile_export.jsonl")
	x := run.Stages[0].Samples()
	if x == nil || len(x.Pairs) != run.Stages[0].OK || len(x.TTFT) != run.Stages[0].TTFT.N {
		t.Fatalf("samples %+v for %d ok requests", x, run.Stages[0].OK)
	}
}
