package cli

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/summary"
	"github.com/tokperf/tokperf/internal/tokenizer"
	"github.com/tokperf/tokperf/internal/workload"
)

// Open loop in virtual time: requests start on their Poisson schedule, and
// with a cap of one in flight the late ones are counted and flagged.
func TestOpenLoop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, errw, code := runVirtual(t, "run", "--sim-profile", "tiny", "--rate", "50", "--requests", "40", "--output-tokens", "10", "-o", dir+"/a.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	_, recs, _, err := results.ReadAll(dir + "/a.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := summary.Of(recs, 0)
	if s.Requests != 40 || s.Late != 0 || strings.Contains(out, "client_lag") {
		t.Errorf("uncapped: %d requests, %d late\n%s", s.Requests, s.Late, out)
	}
	// Records are in finishing order; the schedule's mean gap is 1/rate.
	first, last := recs[0].Scheduled, recs[0].Scheduled
	for _, r := range recs {
		first, last = min(first, r.Scheduled), max(last, r.Scheduled)
	}
	if mean := (last - first).Seconds() / 39; mean < 0.01 || mean > 0.04 {
		t.Errorf("mean scheduled gap %.3f s at 50/s", mean)
	}

	out, errw, code = runVirtual(t, "run", "--sim-profile", "tiny", "--rate", "50", "-c", "1", "--requests", "40", "--output-tokens", "50", "-o", dir+"/b.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	_, recs, _, _ = results.ReadAll(dir + "/b.jsonl")
	if s := summary.Of(recs, 1); s.Late == 0 || !strings.Contains(out, "behind schedule") {
		t.Errorf("capped at 1 with 50 ms requests at 50/s: %d late\n%s", s.Late, out)
	}
}

func TestSimCommand(t *testing.T) {
	t.Parallel()
	var out, errw bytes.Buffer
	e := &env{stdout: &out, stderr: &errw}
	if code := run(context.Background(), []string{"sim", "--list-profiles"}, e); code != 0 {
		t.Fatalf("exit %d: %s", code, errw.String())
	}
	for _, name := range []string{"seed-qwen3.5-397b-8x-rtxpro6000", "seed-qwen3.5-397b-8x-rtxpro6000-mtp", "llama-3.1-8b-1xh100", "tiny"} {
		if !strings.Contains(out.String(), name) {
			t.Errorf("--list-profiles lacks %s:\n%s", name, out.String())
		}
	}
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		var out, errw bytes.Buffer
		e := &env{stdout: &out, stderr: &errw, bench: bench.Env{Listen: func(string) (net.Listener, error) { return n, nil }}}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int)
		go func() { done <- run(ctx, []string{"sim", "--profile", "tiny"}, e) }()
		time.Sleep(time.Second)
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit %d: %s", code, errw.String())
		}
		if first, _, _ := strings.Cut(out.String(), "\n"); first != "http://127.0.0.1:8000" {
			t.Errorf("first line %q, want the URL", first)
		}
	})
}

func TestReportCutFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, _, code := runVirtual(t, "sweep", "--sim-profile", "tiny", "-c", "2", "--output-tokens", "10", "-o", dir+"/r.jsonl")
	if code != 0 {
		t.Fatal(code)
	}
	b, _ := os.ReadFile(dir + "/r.jsonl")
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	// Drop the end line and cut the last request in half, as a crash would.
	cut := strings.Join(lines[:len(lines)-2], "") + lines[len(lines)-2][:40]
	os.WriteFile(dir+"/cut.jsonl", []byte(cut), 0o644)
	var out, errw bytes.Buffer
	if code := Run(context.Background(), []string{"report", dir + "/cut.jsonl"}, nil, &out, &errw); code != 0 {
		t.Fatalf("exit %d: %s", code, errw.String())
	}
	for _, want := range []string{"last line of", "was cut short", "did not finish cleanly", "|   2 |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

// tokperf overhead recovers the simulator's configured chat overhead: the
// seed profile's chat route costs 40 ms per request and 13.6 ms per chunk.
func TestOverheadRecoversChatCost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, errw, code := runVirtual(t, "overhead", "-c", "1", "--requests", "8", "--output-tokens", "100", "-o", dir+"/o.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	golden(t, "overhead-seed.stdout", strings.Replace(out, dir, "DIR", 1))
	m := regexp.MustCompile(`costs about ([\d.]+) ms per chunk and ([\d.]+) ms per request`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no per-chunk and per-request reading:\n%s", out)
	}
	perChunk, _ := strconv.ParseFloat(m[1], 64)
	perRequest, _ := strconv.ParseFloat(m[2], 64)
	if math.Abs(perChunk/13.6-1) > 0.10 || math.Abs(perRequest/40-1) > 0.10 {
		t.Errorf("recovered %.1f ms per chunk and %.1f ms per request, configured 13.6 and 40", perChunk, perRequest)
	}
	if !strings.Contains(out, "| 128 / 135 |") {
		t.Errorf("the chat template's prompt tokens are not shown:\n%s", out)
	}
}

// selftest runs the simulator in a separate process and compares tokperf
// with its truth; a small ramp is accurate.
//
// Serial: real time: tokperf's accuracy against a simulator process.
func TestSelftest(t *testing.T) {
	if os.Getenv("TOKPERF_REALTIME") == "" {
		t.Skip("real time: its accuracy verdict is the machine's idleness; TOKPERF_REALTIME=1 runs it (.ci/run does, on its own)")
	}
	out, errw, code := runCLI(t, "selftest", "--streams", "4,16", "--tokens", "20", "--stream-rate", "50", "--min-chunks", "200", "-o", t.TempDir()+"/s.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	if !strings.Contains(out, "| 16 | 800 |") || (!raceEnabled && !strings.Contains(out, "accurate up to 16 streams")) {
		t.Errorf("selftest output:\n%s\n%s", out, errw)
	}
}

// --duration starts requests for that long; constant arrivals are evenly spaced.
func TestDurationAndConstantArrivals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, errw, code := runVirtual(t, "run", "--sim-profile", "tiny", "-c", "2", "--duration", "2s", "--warmup", "0", "--output-tokens", "100", "-o", dir+"/d.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	_, recs, _, _ := results.ReadAll(dir + "/d.jsonl")
	// 100 tokens at 1 ms each: about 0.1 s per request, two slots, 2 s.
	if n := len(recs); n < 30 || n > 50 {
		t.Errorf("%d requests in 2 s with two slots of ~0.1 s requests", n)
	}
	for _, r := range recs {
		if r.Sent > 2100*time.Millisecond+recs[0].Sent {
			t.Errorf("request %d started at %v, after the 2 s duration", r.ID, r.Sent)
		}
	}
	out, errw, code = runVirtual(t, "run", "--sim-profile", "tiny", "--rate", "10", "--arrival", "constant", "--requests", "5", "--output-tokens", "5", "-o", dir+"/c.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	_, recs, _, _ = results.ReadAll(dir + "/c.jsonl")
	var sched []time.Duration
	for _, r := range recs {
		sched = append(sched, r.Scheduled)
	}
	slices.Sort(sched)
	for i := 1; i < len(sched); i++ {
		if gap := sched[i] - sched[i-1]; gap != 100*time.Millisecond {
			t.Errorf("constant arrivals %v apart, want 100 ms", gap)
		}
	}
}

func TestReportFormats(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, errw, code := runVirtual(t, "sweep", "--sim-profile", "tiny", "-c", "1,2", "--requests", "4", "--output-tokens", "10", "-o", dir+"/r.jsonl"); code != 0 {
		t.Fatal(errw)
	}
	out, errw, code := runCLI(t, "report", dir+"/r.jsonl", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	var doc struct {
		Stages []struct {
			Concurrency   int     `json:"concurrency"`
			AggregateTokS float64 `json:"aggregate_tok_s"`
			OutputTokens  int     `json:"output_tokens"`
		} `json:"stages"`
		Verdict struct{ Kind string } `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(doc.Stages) != 2 || doc.Stages[1].Concurrency != 2 || doc.Stages[1].OutputTokens != 40 || doc.Stages[1].AggregateTokS <= 0 || doc.Verdict.Kind != "rising" {
		t.Errorf("json report: %+v", doc)
	}
	// CSV: one row per stage, one number per cell, the unit in the column name.
	out, _, code = runCLI(t, "report", "--format", "csv", dir+"/r.jsonl")
	rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
	if code != 0 || err != nil || len(rows) != 3 {
		t.Fatalf("csv report (%v): %q", err, out)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	for _, name := range []string{"concurrency", "aggregate_tok_s", "ttft_p99_ms", "tpot_p50_ms", "e2e_p99_ms", "output_tokens", "wall_s"} {
		if _, ok := col[name]; !ok {
			t.Errorf("csv has no column %s: %q", name, rows[0])
		}
	}
	agg, err := strconv.ParseFloat(rows[2][col["aggregate_tok_s"]], 64)
	if rows[2][col["concurrency"]] != "2" || rows[2][col["output_tokens"]] != "40" || err != nil || math.Abs(agg-doc.Stages[1].AggregateTokS) > 1e-9 {
		t.Errorf("csv row %q, want C=2, 40 tokens and the JSON's aggregate %v", rows[2], doc.Stages[1].AggregateTokS)
	}
}

// The JSON of a live sweep is the JSON of `report FILE` of its file: one
// model, built the same way from both.
func TestSweepJSONEqualsReportJSON(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "r.jsonl")
	live, errw, code := runVirtual(t, "sweep", "--sim-profile", "seed", "-c", "1,4", "--output-tokens", "600", "--format", "json", "-o", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	saved, errr, code := runCLI(t, "report", file, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errr)
	}
	if live != saved {
		t.Errorf("sweep --format json and report --format json differ:\n--- sweep\n%s\n--- report\n%s", live, saved)
	}
	var doc struct {
		Schema string `json:"schema"`
		Stages []struct {
			Server *struct {
				Samples       int      `json:"samples"`
				GeneratedTokS *float64 `json:"generated_tok_s"`
			} `json:"server"`
		} `json:"stages"`
		Warnings []any `json:"warnings"`
		Verdict  *struct {
			Kind  string `json:"kind"`
			Steps []struct {
				TokSGain float64 `json:"tok_s_gain"`
			}
		} `json:"verdict"`
	}
	if err := json.Unmarshal([]byte(live), &doc); err != nil {
		t.Fatal(err)
	}
	// The server view is in the JSON as numbers (the seed profile's
	// stages are over five scrape intervals long).
	if doc.Schema != "tokperf-run/1" || len(doc.Stages) != 2 || doc.Stages[1].Server == nil || doc.Stages[1].Server.GeneratedTokS == nil ||
		doc.Verdict == nil || len(doc.Verdict.Steps) != 1 || doc.Verdict.Steps[0].TokSGain <= 1 {
		t.Errorf("json: %s", live)
	}
	if strings.Contains(live, "results:") || !strings.Contains(errw, "results: "+file) {
		t.Errorf("stdout must hold the JSON alone, stderr say where the records are:\n%s", errw)
	}
}

// report --format markdown is a valid GitHub table: a header, a separator
// of as many cells, rows of as many cells, no stray pipes.
func TestReportMarkdown(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "r.jsonl")
	if _, errw, code := runVirtual(t, "sweep", "--sim-profile", "tiny", "-c", "1,2", "--output-tokens", "10", "-o", file); code != 0 {
		t.Fatal(errw)
	}
	out, errw, code := runCLI(t, "report", file, "--format", "markdown")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	var rows [][]string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "|") {
			if !strings.HasSuffix(line, "|") {
				t.Errorf("row does not end with a pipe: %q", line)
			}
			rows = append(rows, mdCells(strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")))
		}
	}
	if len(rows) != 4 {
		t.Fatalf("want header, separator and 2 rows, got %d:\n%s", len(rows), out)
	}
	for i, r := range rows {
		if len(r) != len(rows[0]) {
			t.Errorf("row %d has %d cells, the header %d", i, len(r), len(rows[0]))
		}
	}
	for _, c := range rows[1] {
		if c = strings.TrimSpace(c); !regexp.MustCompile(`^:?-{3,}:?$|^-*-:$`).MatchString(c) {
			t.Errorf("separator cell %q", c)
		}
	}
	if !strings.Contains(out, "- verdict: ") || !strings.Contains(rows[0][6], "aggregate tok/s") {
		t.Errorf("markdown:\n%s", out)
	}
}

// Two open-loop runs compare rate by rate.
func TestCompareOpenLoop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"a", "b"} {
		if _, errw, code := runVirtual(t, "run", "--sim-profile", "tiny", "--rate", "20", "--requests", "40", "--output-tokens", "20", "-o", filepath.Join(dir, name+".jsonl")); code != 0 {
			t.Fatal(errw)
		}
	}
	out, errw, code := runCLI(t, "compare", filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	if !strings.Contains(out, "| 20/s | aggregate tok/s |") || !strings.Contains(out, "| 20/s | TTFT p50 ms |") {
		t.Errorf("no rows for the 20/s stage:\n%s", out)
	}
}

// mdCells splits a Markdown table row's inside at its unescaped pipes.
func mdCells(row string) []string {
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row):
			cur.WriteByte(row[i])
			cur.WriteByte(row[i+1])
			i++
		case row[i] == '|':
			cells = append(cells, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	return append(cells, cur.String())
}

// Datasets run end to end: a ShareGPT file's first human turns are the
// prompts and its replies' lengths the outputs; a chat file's messages go
// to the chat API as written, with its max_tokens. Each request's record
// holds the lengths from the file.
func TestDatasetsEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sharegpt := filepath.Join(dir, "sg.json")
	os.WriteFile(sharegpt, []byte(`[
 {"conversations": [{"from": "human", "value": "Tell me about the sea and its tides."}, {"from": "gpt", "value": "The sea rises and falls twice a day because the moon pulls on it."}]},
 {"conversations": [{"from": "system", "value": "Be brief."}, {"from": "human", "value": "Name three colours."}, {"from": "gpt", "value": "Red, green and blue."}]},
 {"conversations": [{"from": "gpt", "value": "no human turn: skipped"}]}
]`), 0o644)
	chat := filepath.Join(dir, "chat.jsonl")
	os.WriteFile(chat, []byte(`{"messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "What is two plus two?"}], "max_tokens": 7}
{"messages": [{"role": "user", "content": "Write a haiku about rain."}], "max_tokens": 12, "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}
`), 0o644)
	want := func(text string) int { return workload.EstimateTokens(text) }
	for _, tc := range []struct {
		name     string
		args     []string
		prompts  []int // asked prompt tokens, by the file
		outputs  []int // output tokens, by the file
		describe string
	}{
		{"sharegpt", []string{"--dataset", sharegpt}, []int{want("Tell me about the sea and its tides."), want("Name three colours.")},
			[]int{want("The sea rises and falls twice a day because the moon pulls on it."), want("Red, green and blue.")}, "dataset " + sharegpt + " (sharegpt): 2 requests"},
		{"chat", []string{"--dataset", chat, "--endpoint", "chat"}, nil, []int{7, 12}, "dataset " + chat + " (chat): 2 requests"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, tc.name+"-result.jsonl") // not the dataset's own name: -o does not replace it
			args := append([]string{"run", "--sim-profile", "tiny", "-c", "1", "--requests", "2", "--warmup", "0", "-o", file}, tc.args...)
			out, errw, code := runVirtual(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errw)
			}
			if !strings.Contains(out, "workload: the dataset's prompts") || !strings.Contains(out, "prompts: "+tc.describe) {
				t.Errorf("the report does not say where the prompts came from:\n%s", out)
			}
			_, recs, _, err := results.ReadAll(file)
			if err != nil {
				t.Fatal(err)
			}
			var prompts, outputs []int
			for _, r := range recs {
				if !r.OK() {
					t.Fatalf("request %d: %s %s", r.ID, r.Status, r.Error)
				}
				prompts, outputs = append(prompts, r.AskedPromptTokens), append(outputs, r.OutputTokens)
			}
			slices.Sort(outputs)
			wantOut := slices.Clone(tc.outputs)
			slices.Sort(wantOut)
			if !slices.Equal(outputs, wantOut) {
				t.Errorf("output tokens %v, the file's %v", outputs, wantOut)
			}
			if tc.prompts != nil {
				slices.Sort(prompts)
				slices.Sort(tc.prompts)
				if !slices.Equal(prompts, tc.prompts) {
					t.Errorf("prompt tokens %v, the file's %v", prompts, tc.prompts)
				}
			}
		})
	}
}

// With a tokenizer a synthetic prompt asked for 512 tokens is 512 by it
// (counted again here, by the real o200k_base), and the record and the
// header say which tokenizer counted.
func TestTokenizerCountsPrompts(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "r.jsonl")
	out, errw, code := runVirtual(t, "run", "--sim-profile", "tiny", "--tokenizer", "o200k_base", "--input-tokens", "512", "--output-tokens", "4", "--requests", "4", "--seed", "3", "-o", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	h, recs, _, err := results.ReadAll(file)
	if err != nil {
		t.Fatal(err)
	}
	if h.Setup.Workload.Tokenizer != "o200k_base" || !strings.Contains(out, "lengths by tokenizer o200k_base") {
		t.Errorf("header tokenizer %q; report:\n%s", h.Setup.Workload.Tokenizer, out)
	}
	for _, r := range recs {
		if r.AskedPromptTokens != 512 || r.AskedPromptSource != record.SourceTokenizer {
			t.Errorf("request %d: %d prompt tokens by %q, want 512 by the tokenizer", r.ID, r.AskedPromptTokens, r.AskedPromptSource)
		}
		// The embedded simulator counts with the run's tokenizer, as the
		// served model would: its usage agrees.
		if r.PromptTokens != 512 || r.PromptSource != record.SourceUsage {
			t.Errorf("request %d: the server counted %d prompt tokens (%q), want 512", r.ID, r.PromptTokens, r.PromptSource)
		}
	}
	if strings.Contains(out, "prompt_tokens") || strings.Contains(out, "the server counted") {
		t.Errorf("a count disagreement reported:\n%s", out)
	}
	// The same workload's prompts, counted independently.
	tok, err := tokenizer.Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	in, _ := workload.ParseLengths("512")
	w, err := workload.New(workload.Options{Tokenizer: tok, Input: in, Output: workload.Fixed(4), Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if n := tok.Count(w.Request(r.ID).Prompt); n != 512 {
			t.Errorf("request %d: its prompt is %d tokens by o200k_base, want 512", r.ID, n)
		}
	}
}

// With --usage final the counts come from the final usage: exact totals,
// tokens per chunk assumed one (and said so only where that is wrong), and
// the header records the choice.
func TestUsageFinalRun(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "r.jsonl")
	out, errw, code := runVirtual(t, "run", "--sim-profile", "tiny", "--usage", "final", "--requests", "4", "--output-tokens", "30", "-o", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	h, recs, _, err := results.ReadAll(file)
	if err != nil || h.Setup.Usage != "final" {
		t.Fatalf("usage %q, %v", h.Setup.Usage, err)
	}
	for _, r := range recs {
		if r.OutputTokens != 30 || r.OutputSource != record.SourceUsage || r.ChunkSource != record.SourceChunks {
			t.Errorf("request %d: %d tokens from %q, chunks from %q", r.ID, r.OutputTokens, r.OutputSource, r.ChunkSource)
		}
	}
	if strings.Contains(out, "warning: C=1: tokens per chunk") {
		t.Errorf("one token a chunk is right here, yet warned:\n%s", out)
	}
}

// --tokenizer server counts prompts with the server's own /tokenize: a
// prompt asked for 96 tokens is 96 by the server, whose usage agrees; a
// server without such a route is told to give a tokenizer file.
func TestServerTokenizer(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "r.jsonl")
	out, errw, code := runVirtual(t, "run", "--sim-profile", "tiny", "--tokenizer", "server", "--input-tokens", "96", "--output-tokens", "4", "--requests", "4", "-o", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	h, recs, _, err := results.ReadAll(file)
	if err != nil {
		t.Fatal(err)
	}
	if h.Setup.Workload.Tokenizer != "the server's /tokenize (vllm)" || !strings.Contains(out, "lengths by tokenizer the server's /tokenize (vllm)") {
		t.Errorf("header tokenizer %q; report:\n%s", h.Setup.Workload.Tokenizer, out)
	}
	for _, r := range recs {
		if r.AskedPromptTokens != 96 || r.AskedPromptSource != record.SourceTokenizer || r.PromptTokens != 96 {
			t.Errorf("request %d: asked %d (%q), the server counted %d; want 96 both", r.ID, r.AskedPromptTokens, r.AskedPromptSource, r.PromptTokens)
		}
	}
	_, errw, code = runVirtual(t, "run", "--sim-profile", "seed", "--tokenizer", "server", "--requests", "1", "-o", file)
	if code != exitUsage || !strings.Contains(errw, "the sglang server has no tokenize route tokperf knows") {
		t.Errorf("exit %d: %s", code, errw)
	}
}
