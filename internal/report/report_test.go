package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/check"
	"github.com/tokperf/tokperf/internal/record"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// run is a two-stage run built from records whose figures are known: at
// C=1 requests of 20 tokens over 100 ms, at C=2 the same, two at a time.
func run() *analyze.Run {
	setup := record.Setup{Command: "sweep", URL: "http://127.0.0.1:8000", Endpoint: "completions", Route: "/v1/completions", Model: "m",
		Server: record.Server{Engine: "vllm"}, Workload: record.Workload{InputTokens: 16, OutputTokens: 20, IgnoreEOS: true}}
	f := analyze.NewFold(setup, "r.jsonl")
	ms := time.Millisecond
	id := 0
	for stage, c := range []int{1, 2} {
		for i := range 4 {
			start := time.Duration(i/c) * 100 * ms
			r := record.New(id)
			id++
			r.Stage, r.Concurrency, r.Sent, r.Scheduled = stage, c, start, start
			for k := range 20 {
				r.AddChunk(start+10*ms+time.Duration(k)*90*ms/19, 1)
			}
			r.FirstContent, r.Done = r.FirstToken, r.LastToken
			r.OutputTokens, r.OutputSource, r.ChunkSource, r.Status = 20, record.SourceUsage, record.SourceContinuous, record.StatusOK
			f.Add(&r)
		}
	}
	f.Integrity(false, true, false)
	return f.Run()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		os.WriteFile(path, []byte(got), 0o644)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if got != string(want) {
		t.Errorf("%s changed:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// Every format of the registry has a golden file for a run.
func TestFormatsGolden(t *testing.T) {
	t.Parallel()
	r := run()
	for _, format := range Formats() {
		t.Run(format, func(t *testing.T) {
			var b bytes.Buffer
			if err := Render(&b, format, r); err != nil {
				t.Fatal(err)
			}
			if format == "png" {
				goldenPNG(t, "run.png", b.Bytes())
				return
			}
			golden(t, "run."+format, b.String())
		})
	}
}

// The JSON is the model: it decodes back into a Run with the same figures.
func TestJSONIsTheModel(t *testing.T) {
	t.Parallel()
	r := run()
	var b bytes.Buffer
	if err := Render(&b, "json", r); err != nil {
		t.Fatal(err)
	}
	var back analyze.Run
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Schema != analyze.RunSchema || len(back.Stages) != 2 || back.Stages[1].AggregateTokS != r.Stages[1].AggregateTokS ||
		back.Stages[0].TTFT.P99 != r.Stages[0].TTFT.P99 || back.Verdict.Kind != r.Verdict.Kind {
		t.Errorf("decoded %+v", back)
	}
}

func TestUnknownFormatAndModel(t *testing.T) {
	t.Parallel()
	if err := Render(&bytes.Buffer{}, "yaml", run()); err == nil || !strings.Contains(err.Error(), "csv, html, json, markdown, png, text") {
		t.Errorf("unknown format: %v", err)
	}
	if err := Render(&bytes.Buffer{}, "csv", 42); err == nil {
		t.Error("a model with no renderer was rendered")
	}
}

// docs/JSON.md documents every schema the models write.
func TestSchemasDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "JSON.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{analyze.RunSchema, analyze.CompareSchema, analyze.BaselineSchema, analyze.OverheadSchema, check.ResultSchema, analyze.SelftestSchema, analyze.ExperimentSchema, analyze.ExplainSchema} {
		if !strings.Contains(string(doc), "`"+s+"`") {
			t.Errorf("docs/JSON.md does not document %s", s)
		}
	}
}

// Re-sends after a kept-alive connection failed are said in the text
// report, not left to the JSON (a server that closes connections after
// every stream causes many).
func TestRetriesShown(t *testing.T) {
	t.Parallel()
	r := run()
	r.Stages[1].Retries = 3
	var b bytes.Buffer
	Render(&b, "text", r)
	if !strings.Contains(b.String(), "C=2: 3 requests were sent again on a new connection") || strings.Contains(b.String(), "C=1: 0 requests") {
		t.Errorf("%s", b.String())
	}
}

// Where visible content comes after the first token (reasoning), the text
// report sets TTFO beside TTFT.
func TestTTFOShown(t *testing.T) {
	t.Parallel()
	r := run()
	r.Stages[0].TTFO.P50, r.Stages[0].TTFO.P99 = 250, 300
	var b bytes.Buffer
	Render(&b, "text", r)
	if !strings.Contains(b.String(), "C=1: the first visible content (TTFO) came after the first token: TTFO p50/p99 250 / 300 ms against TTFT 10.0 / 10.0 ms") || strings.Contains(b.String(), "C=2: the first visible") {
		t.Errorf("%s", b.String())
	}
}

// Failed requests of an overhead comparison are counted, not dropped silently.
func TestOverheadCountsFailures(t *testing.T) {
	t.Parallel()
	ok := func(id int, endpoint string) record.Record {
		r := record.New(id)
		r.Endpoint, r.Sent, r.Status, r.OutputTokens = endpoint, 0, record.StatusOK, 3
		for k := range 3 {
			r.AddChunk(time.Duration(10+k)*time.Millisecond, 1)
		}
		r.Done = r.LastToken
		return r
	}
	failed := record.New(9)
	failed.Endpoint, failed.Status, failed.HTTPCode = "/v1/chat/completions", record.StatusHTTPError, 500
	recs := []record.Record{ok(0, "/generate"), ok(1, "/v1/chat/completions"), ok(2, "/generate"), failed}
	o := &analyze.Overhead{RawRoute: "/generate", ChatRoute: "/v1/chat/completions", Levels: []analyze.OverheadLevel{analyze.OverheadOf(1, recs, "/v1/chat/completions")}}
	var b bytes.Buffer
	Render(&b, "text", o)
	if !strings.Contains(b.String(), "C=1: 1 of 4 requests failed (raw 0, chat 1) and are left out of the figures above") {
		t.Errorf("%s", b.String())
	}
}

// A self-test level whose simulator fell behind says so: it offered less.
func TestSelftestSaysTheSimulatorFellBehind(t *testing.T) {
	t.Parallel()
	s := &analyze.Selftest{Levels: []analyze.SelftestLevel{
		{Streams: 32, OfferedTokS: 800, SimSteps: 1000, SimLateSteps: 10},
		{Streams: 4096, OfferedTokS: 102400, SimSteps: 1000, SimLateSteps: 300},
	}}
	var b bytes.Buffer
	Render(&b, "text", s)
	if !strings.Contains(b.String(), "at 4096 streams the simulator ran 300 of its 1000 steps late (30%)") || strings.Contains(b.String(), "at 32 streams the simulator") {
		t.Errorf("%s", b.String())
	}
}

// The text table fits 100 columns by default, even with five-digit
// throughputs and four-digit latencies; --wide (Run.Wide) has every column.
func TestCompactTableFits100(t *testing.T) {
	t.Parallel()
	r := run()
	for i := range r.Stages {
		s := &r.Stages[i].Stage
		s.Concurrency = 1024 * (i + 1)
		s.AggregateTokS, s.DecodeTokS.Mean = 123456.7, 9999.9
		s.TTFT.P50, s.TTFT.P99 = 1234.5, 98765.4
		s.ITL.P50, s.ITL.P99 = 123.4, 5678.9
		s.E2E.P50, s.E2E.P99 = 123456, 987654
		s.Errors = map[record.Status]int{record.Status("http_500"): 12345}
	}
	for _, wide := range []bool{false, true} {
		r.Wide = wide
		var b strings.Builder
		Text(&b, r)
		cols, widest := 0, 0
		for _, line := range strings.Split(b.String(), "\n") {
			if strings.HasPrefix(line, "|") {
				widest = max(widest, utf8.RuneCountInString(line))
				cols = strings.Count(line, "|") - 1
			}
		}
		switch {
		case !wide && widest > 100:
			t.Errorf("compact table is %d columns wide:\n%s", widest, b.String())
		case wide && cols != 13:
			t.Errorf("--wide table has %d columns, want all 13", cols)
		case !wide && !strings.Contains(b.String(), "--wide"):
			t.Error("the compact table does not say how to see every column")
		}
	}
}
