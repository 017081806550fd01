package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
)

// runStarved is runVirtual with the embedded simulator sleeping stall
// after each of its steps, as a machine too busy to give it the CPU would
// make it (0: not starved).
func runStarved(t *testing.T, stall time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		var out, errw bytes.Buffer
		e := &env{
			stdin: strings.NewReader(""), stdout: &out, stderr: &errw,
			bench: bench.Env{
				Getenv: func(string) string { return "" },
				Listen: func(string) (net.Listener, error) { return n, nil },
				Dial:   n.Dial,
			},
		}
		if stall > 0 {
			e.bench.SimStall = func() { time.Sleep(stall) }
		}
		code = run(context.Background(), args, e)
		stdout, stderr = out.String(), errw.String()
	})
	return
}

// findings are the phrases with which a verdict states what it found;
// none may be printed from a stage that was not measured validly.
var findings = []string{"not saturated", "saturated near", "over-saturated", "efficient)", "the twin fitted to these levels predicts", "the curve bends"}

// jsonVerdict is the part of a run's JSON the gates speak in.
type jsonVerdict struct {
	Verdict *struct {
		Kind  string `json:"kind"`
		Text  string `json:"text"`
		Basis *struct {
			Stages   []string `json:"stages"`
			Withheld string   `json:"withheld"`
		} `json:"basis"`
		Steps []struct {
			Text     string `json:"text"`
			Withheld string `json:"withheld"`
		} `json:"steps"`
	} `json:"verdict"`
	Warnings []struct {
		Stage, Check string
	} `json:"warnings"`
}

func verdictOf(t *testing.T, js string) jsonVerdict {
	t.Helper()
	var v jsonVerdict
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if v.Verdict == nil || v.Verdict.Basis == nil {
		t.Fatalf("no verdict with its basis in the JSON:\n%s", js)
	}
	return v
}

// assertWithheld checks a run's text and JSON reports: the verdict and
// every step say "not judged" and why (want), none states a finding, and
// report --strict exits 5 where report alone exits 0.
func assertWithheld(t *testing.T, text, js, want string) {
	t.Helper()
	for _, f := range findings {
		if strings.Contains(text, f) {
			t.Errorf("the text report states a finding (%q) from an invalid stage:\n%s", f, text)
		}
	}
	if !strings.Contains(text, "verdict: not judged: ") || !strings.Contains(text, want) {
		t.Errorf("the text verdict is not withheld with %q:\n%s", want, text)
	}
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "verdict: not judged: ") && len(line) > 160 {
			t.Errorf("the withheld verdict is %d characters, not one short line: %s", len(line), line)
		}
	}
	v := verdictOf(t, js)
	if v.Verdict.Kind != "not_judged" || !strings.HasPrefix(v.Verdict.Text, "not judged: ") || !strings.Contains(v.Verdict.Basis.Withheld, want) {
		t.Errorf("JSON verdict %+v, want kind not_judged withheld for %q", *v.Verdict, want)
	}
	for _, st := range v.Verdict.Steps {
		if st.Withheld == "" || strings.Contains(st.Text, "efficient") {
			t.Errorf("JSON step %+v states a finding", st)
		}
	}
	for _, f := range findings {
		if strings.Contains(v.Verdict.Text, f) {
			t.Errorf("the JSON verdict states a finding (%q): %s", f, v.Verdict.Text)
		}
	}
}

// A sweep on a simulator starved of CPU (every step 10 ms late, in
// virtual time) states no verdict: the text and the JSON say "not judged"
// and name the starved levels; --strict makes the exit 5. The same sweep
// on a simulator that is not starved is judged, so the gate is what
// withholds it.
func TestStarvedSimulatorVerdictWithheld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := func(file string) []string {
		return []string{"sweep", "--sim-profile", "tiny", "-c", "1,4", "--requests", "16", "--output-tokens", "32", "-o", filepath.Join(dir, file)}
	}
	out, errw, code := runStarved(t, 10*time.Millisecond, args("starved.jsonl")...)
	if code != 0 {
		t.Fatalf("a withheld verdict changed the exit code: %d\n%s\n%s", code, out, errw)
	}
	if !strings.Contains(out, "starved_simulator") && !strings.Contains(out, "fell behind real time") {
		t.Fatalf("the stall did not starve the simulator:\n%s", out)
	}
	js, errw, code := runStarved(t, 0, "report", "--format", "json", filepath.Join(dir, "starved.jsonl"))
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, errw)
	}
	assertWithheld(t, out, js, "'s simulator ran")
	if !strings.Contains(out, "--virtual") {
		t.Errorf("a starved simulator's withheld verdict does not point at --virtual:\n%s", out)
	}
	if _, errw, code := runStarved(t, 0, "report", "--strict", filepath.Join(dir, "starved.jsonl")); code != exitWithheld || !strings.Contains(errw, "not judged") {
		t.Errorf("report --strict: exit %d, want %d with the reason\n%s", code, exitWithheld, errw)
	}

	out, errw, code = runStarved(t, 0, append(args("fed.jsonl"), "--strict")...)
	if code != 0 {
		t.Fatalf("a sweep on a fed simulator: exit %d\n%s\n%s", code, out, errw)
	}
	if strings.Contains(out, "not judged") || !strings.Contains(out, "verdict: ") {
		t.Errorf("a sweep on a fed simulator was not judged:\n%s", out)
	}

	// An A/B of the fed run against the starved one judges no difference.
	fed, starved := filepath.Join(dir, "fed.jsonl"), filepath.Join(dir, "starved.jsonl")
	out, errw, code = runCLI(t, "compare", fed, starved)
	if code != 0 || strings.Count(out, "not judged (see the note)") != 6 || !strings.Contains(out, "not judged: B ("+starved+"): C=4's simulator ran") {
		t.Errorf("compare: exit %d, want every difference not judged:\n%s\n%s", code, out, errw)
	}
	js, _, _ = runCLI(t, "compare", "--format", "json", fed, starved)
	if strings.Contains(js, `"significant": true`) || !strings.Contains(js, `"withheld": "B (`) {
		t.Errorf("compare JSON judges a starved stage:\n%s", js)
	}
	if _, errw, code := runCLI(t, "compare", "--strict", fed, starved); code != exitWithheld {
		t.Errorf("compare --strict: exit %d, want %d\n%s", code, exitWithheld, errw)
	}
}

// writeLagged writes a closed-loop sweep at C=1 and C=4 whose requests
// each take 1 s; at C=4 each waited lag on the client before it was sent.
func writeLagged(t *testing.T, path string, lag time.Duration) { writeSweep(t, path, lag, false) }

// writeSweep is writeLagged, with every request at C=4 failed if failed.
func writeSweep(t *testing.T, path string, lag time.Duration, failed bool) {
	t.Helper()
	setup := record.Setup{Command: "sweep", Model: "m", Endpoint: "completions", Server: record.Server{Engine: "vllm"},
		Workload: record.Workload{InputTokens: 8, OutputTokens: 10, IgnoreEOS: true}, Load: record.Load{Concurrency: []int{1, 4}}}
	w, err := results.Create(path, results.Header{Tool: "tokperf", Version: Version(), Setup: setup})
	if err != nil {
		t.Fatal(err)
	}
	id := 0
	for stage, c := range []int{1, 4} {
		at := time.Duration(stage) * time.Hour
		for range c {
			for i := range 8 {
				r := record.New(id)
				id++
				start := at + time.Duration(i)*(time.Second+lag)
				r.Stage, r.Concurrency = stage, c
				r.Scheduled, r.Sent = start, start
				if c == 4 {
					r.Sent = start + lag
				}
				for k := 1; k <= 10; k++ {
					r.AddChunk(r.Sent+time.Duration(k)*100*time.Millisecond, 1)
				}
				r.Done = r.Sent + time.Second
				r.OutputTokens, r.PromptTokens = 10, 8
				r.Status, r.OutputSource = record.StatusOK, record.SourceUsage
				if failed && c == 4 {
					r = record.New(r.ID)
					r.Stage, r.Concurrency, r.Scheduled, r.Sent, r.Done = stage, c, start, start, start+time.Millisecond
					r.Status, r.HTTPCode, r.Error = record.StatusHTTPError, 500, "internal error"
				}
				w.Write(r)
			}
		}
	}
	w.Close(false)
}

// A stage where the client made requests wait (a tenth of the slots'
// time at C=4, the upper level of a rising sweep) cannot change the
// verdict: the wait only lowered C=4's throughput, and the truth would
// rise faster still. The verdict stands with its bound, in text, JSON,
// markdown and html, and --strict exits 0; the same file without the wait
// states no bound.
func TestClientLagVerdictBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lagged, clean := filepath.Join(dir, "lagged.jsonl"), filepath.Join(dir, "clean.jsonl")
	writeLagged(t, lagged, 100*time.Millisecond)
	writeLagged(t, clean, 0)
	const bound = "a bound of 9.1% from the host: the client made C=4's requests wait 9.1% of the slots' time"
	text, errw, code := runCLI(t, "report", lagged)
	if code != 0 {
		t.Fatalf("report: exit %d\n%s\n%s", code, text, errw)
	}
	if !strings.Contains(text, "the client made requests wait") {
		t.Fatalf("the lag did not show as client lag:\n%s", text)
	}
	if !strings.Contains(text, "verdict: not saturated") || !strings.Contains(text, bound) {
		t.Errorf("the text verdict does not stand with its bound %q:\n%s", bound, text)
	}
	// The twin's fit would take the wait for the server's, beyond its 5%,
	// and it has two levels only: no prediction is quoted.
	if strings.Contains(text, "the twin fitted to these levels predicts") {
		t.Errorf("the twin's prediction is quoted from a fit the wait may have moved:\n%s", text)
	}
	js, errw, code := runCLI(t, "report", "--format", "json", lagged)
	if code != 0 {
		t.Fatalf("report json: exit %d\n%s", code, errw)
	}
	v := verdictOf(t, js)
	if v.Verdict.Kind != "rising" || v.Verdict.Basis.Withheld != "" || !strings.Contains(v.Verdict.Text, bound) {
		t.Errorf("JSON verdict %+v, want rising with the bound", *v.Verdict)
	}
	for _, format := range []string{"markdown", "html"} {
		got, _, _ := runCLI(t, "report", "--format", format, lagged)
		if !strings.Contains(got, "a bound of 9.1% from the host") {
			t.Errorf("%s: the verdict does not state its bound:\n%s", format, got)
		}
	}
	text, errw, code = runCLI(t, "report", "--strict", clean)
	if code != 0 || strings.Contains(text, "not judged") || strings.Contains(text, "from the host") {
		t.Errorf("the file without lag: exit %d, not judged, or bounded:\n%s\n%s", code, text, errw)
	}
}

// A drop to 0 tok/s (every request of B failed at C=4) is a significant
// difference in compare, not ~.
func TestCompareDropToZeroIsSignificant(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	writeSweep(t, a, 0, false)
	writeSweep(t, b, 0, true)
	out, errw, _ := runCLI(t, "compare", a, b)
	if !strings.Contains(out, "| 4 | aggregate tok/s | 40.0 | 0.0 | 0.00× [0.00, 0.00] |") {
		t.Errorf("the drop to 0 tok/s is not significant:\n%s\n%s", out, errw)
	}
	if !strings.Contains(out, "| 1 | aggregate tok/s | 10.0 | 10.0 | ~") {
		t.Errorf("the equal level is not ~:\n%s", out)
	}
}

// A soak on a simulator starved of CPU gives no stability verdict when
// its lateness could make a drift (a 300 ms stall after every step: over
// a third of the time behind its pace); with a 10 ms stall (a fraction of
// a percent of the time) the verdict stands and states its bound. The
// same degrading profile is judged "degrading" when fed (TestVirtualSoak).
func TestStarvedSoakNotJudged(t *testing.T) {
	t.Parallel()
	profile, _ := filepath.Abs(filepath.Join("testdata", "degrading.yaml"))
	file := filepath.Join(t.TempDir(), "soak.jsonl")
	args := []string{"soak", "--sim-profile", profile, "-c", "4", "--duration", "8m", "--output-tokens", "10", "--input-tokens", "16", "-o", file}
	out, errw, code := runStarved(t, 300*time.Millisecond, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	if !strings.Contains(out, "stability C=4: not judged: C=4's simulator ran") || strings.Contains(out, "degrading:") {
		t.Errorf("the stability verdict of a starved soak is not withheld:\n%s", out)
	}
	js, _, _ := runStarved(t, 0, "report", "--format", "json", file)
	if !strings.Contains(js, `"kind": "not_judged"`) || !strings.Contains(js, `"stability_basis": {`) || strings.Contains(js, `"kind": "degrading"`) {
		t.Errorf("JSON of a starved soak:\n%s", js)
	}
	if _, _, code := runStarved(t, 0, "report", "--strict", file); code != exitWithheld {
		t.Errorf("report --strict: exit %d, want %d", code, exitWithheld)
	}
	args[len(args)-1] = filepath.Join(filepath.Dir(file), "soak-fed.jsonl")
	out, errw, code = runStarved(t, 10*time.Millisecond, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	if !strings.Contains(out, "stability C=4: degrading:") || !strings.Contains(out, "from the host: C=4's simulator ran") {
		t.Errorf("a soak on a simulator a fraction of a percent behind is not judged with its bound:\n%s", out)
	}
}
