package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
)

// The four verdicts end every experiment, in every format: one line each
// in text, Markdown and HTML, numbers in the JSON.
func TestExperimentVerdictsInEveryFormat(t *testing.T) {
	t.Parallel()
	a, b := keep(run()), keep(run())
	for _, r := range []*analyze.Run{a, b} {
		// The fixture's client-lag warning would withhold the verdicts
		// (validity gates; tested in analyze): these runs were measured
		// validly.
		r.Warnings = slices.DeleteFunc(r.Warnings, func(w analyze.Warning) bool { return w.Check == "client_lag" })
	}
	e := &analyze.Experiment{Schema: analyze.ExperimentSchema, Workloads: []string{"synthetic", "sharegpt"}, Asked: analyze.ExperimentAsked{Soak: true},
		Configs: []analyze.ExperimentConfig{
			{Name: "seed", OK: true, Run: a, Seeds: []int64{7}, Workloads: []analyze.WorkloadRun{{Name: "synthetic", Run: a}, {Name: "sharegpt", Run: b}}},
			{Name: "seed-mtp", OK: true, Run: b, Seeds: []int64{7}, CheckFailed: true},
		}}
	e.CompareConfigs([]int{1, 2})
	v := e.ComputeVerdicts()
	v.Fair.Withhold("a stage it rests on was measured on a starved simulator")
	lines := []string{v.Representative.Line(), v.Configurations.Line(), v.Fair.Line(), v.Stable.Line()}
	for _, want := range []string{"representative: ", "configurations: seed-mtp / seed aggregate tok/s: C=1 ", "fair: withheld — a stage", "stable: not measured — seed: not measured (the soak did not run)"} {
		found := false
		for _, l := range lines {
			found = found || strings.HasPrefix(l, want)
		}
		if !found {
			t.Errorf("no verdict line starts with %q: %q", want, lines)
		}
	}
	for _, format := range []string{"text", "markdown", "html"} {
		var out bytes.Buffer
		if err := Render(&out, format, e); err != nil {
			t.Fatal(err)
		}
		page := out.String()
		if format == "html" {
			page = strings.NewReplacer("&amp;", "&", "&#39;", "'", "&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#34;", `"`).Replace(page)
		}
		for _, l := range lines {
			if format == "markdown" {
				l = mdEscape(l)
			}
			if !strings.Contains(page, l) {
				t.Errorf("%s lacks the verdict %q", format, l)
			}
		}
	}
	var out bytes.Buffer
	if err := Render(&out, "json", e); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Verdicts map[string]struct {
			Answer, Withheld string
			RestsOn          []string `json:"rests_on"`
			Figures          []struct {
				Value  float64
				Lo, Hi *float64
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	c := got.Verdicts["configurations"]
	// The fixture's four requests a level are too few for time blocks:
	// its ratios come without an interval (METRICS.md, "Error model").
	if len(got.Verdicts) != 4 || len(c.Figures) != 2 || c.Figures[0].Lo != nil || got.Verdicts["fair"].Withheld == "" || len(c.RestsOn) != 2 {
		t.Errorf("json verdicts: %s", out.String())
	}
}

// docs/JSON.md names every field of an experiment's verdicts.
func TestExperimentVerdictFieldsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "JSON.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "## An experiment")
	for _, ty := range []reflect.Type{reflect.TypeFor[analyze.Verdicts](), reflect.TypeFor[analyze.LoopVerdict](), reflect.TypeFor[analyze.VerdictFigure](),
		reflect.TypeFor[analyze.ExperimentAsked](), reflect.TypeFor[analyze.WorkloadRun](), reflect.TypeFor[analyze.ExperimentConfig](), reflect.TypeFor[analyze.ExperimentCell](), reflect.TypeFor[analyze.ExperimentLevel]()} {
		for i := range ty.NumField() {
			name := strings.Split(ty.Field(i).Tag.Get("json"), ",")[0]
			if name != "" && name != "-" && !strings.Contains(section, `"`+name+`"`) && !strings.Contains(section, "`"+name+"`") {
				t.Errorf("docs/JSON.md's experiment section does not name %s.%s", ty.Name(), name)
			}
		}
	}
}

// A repeated configuration shows the spread across its repeats, for every
// figure, every repeat's log and its seeds.
func TestExperimentRepeatsShown(t *testing.T) {
	t.Parallel()
	r := keep(run())
	lo, hi, cv := 90.0, 110.0, 0.05
	r.Repeats = []analyze.Repeats{{Label: "C=1", Concurrency: 1, N: 2, Figures: []analyze.RepeatFigure{
		{Name: "aggregate tok/s", Field: "aggregate_tok_s", Values: []float64{95, 105}, Mean: 100, Lo: &lo, Hi: &hi, CV: &cv},
		{Name: "TTFT p50 ms", Field: "ttft_p50_ms", Values: []float64{9, 11}, Mean: 10, Lo: &lo, Hi: &hi, CV: &cv}}}}
	e := &analyze.Experiment{Configs: []analyze.ExperimentConfig{{Name: "a", OK: true, Run: r, Seeds: []int64{1, 7920}, Logs: []string{"a-r1.log", "a-r2.log"}}}}
	e.CompareConfigs([]int{1, 2})
	e.ComputeVerdicts()
	var out bytes.Buffer
	if err := Render(&out, "text", e); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"repeats C=1 (2, mean [95% interval]): aggregate tok/s 100.0 [90.0, 110.0] CV 5.0%; TTFT p50 ms 10.0", "logs: a-r1.log, a-r2.log", "seed 1, 7920"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
}

// An experiment's page leads with its four verdicts (in the summary box,
// before any chart) and draws every section: the workloads side by side,
// the overhead, the soak's slices.
func TestExperimentPageLeadsAndDrawsEverySection(t *testing.T) {
	t.Parallel()
	a, b := keep(run()), keep(run())
	soak := keep(run())
	soak.Stages = soak.Stages[:1]
	soak.Stages[0].Slices = []record.Slice{{Index: 0, From: 10 * time.Second, To: 16 * time.Second, AggregateTokS: 900}, {Index: 1, From: 16 * time.Second, To: 22 * time.Second, AggregateTokS: 950}}
	ov := &analyze.Overhead{Levels: []analyze.OverheadLevel{{C: 1, TTFT: analyze.Diff{Value: 54.9, HalfWidth: 1.2}}, {C: 8, TTFT: analyze.Diff{Value: 61, HalfWidth: 2}}}}
	e := &analyze.Experiment{Schema: analyze.ExperimentSchema, Workloads: []string{"synthetic", "sharegpt"}, Asked: analyze.ExperimentAsked{Soak: true},
		Configs: []analyze.ExperimentConfig{
			{Name: "seed", OK: true, Run: a, Overhead: ov, Soak: soak, Workloads: []analyze.WorkloadRun{{Name: "synthetic", Run: a}, {Name: "sharegpt", Run: b}}},
			{Name: "seed-mtp", OK: true, Run: b},
		}}
	e.CompareConfigs([]int{1, 2})
	v := e.ComputeVerdicts()
	var out bytes.Buffer
	if err := Render(&out, "html", e); err != nil {
		t.Fatal(err)
	}
	page := out.String()
	summary, charts := strings.Index(page, `id="summary"`), strings.Index(page, "<h2>Charts</h2>")
	first := strings.Index(page, text(v.Representative.Line()))
	if summary < 0 || first < summary || first > charts {
		t.Errorf("the verdicts do not lead the page: summary at %d, the first verdict at %d, charts at %d", summary, first, charts)
	}
	for _, name := range []string{"workloads", "overhead", "soak"} {
		if !strings.Contains(page, `data-chart="`+name+`"`) {
			t.Errorf("the page has no %s chart", name)
		}
	}
	if !strings.Contains(page, "chat adds 54.9 ± 1.2 ms to TTFT") || !strings.Contains(page, "seed, slice 1: 950.0 tok/s aggregate") {
		t.Errorf("the overhead's or the soak's points lack their figures")
	}
}

// The experiment's text ends with its four verdicts, one line each of at
// most analyze.ShortMax characters with its key number; the details come
// above them.
func TestExperimentEndsWithFourShortVerdicts(t *testing.T) {
	t.Parallel()
	a, b := keep(run()), keep(run())
	for _, r := range []*analyze.Run{a, b} {
		r.Warnings = slices.DeleteFunc(r.Warnings, func(w analyze.Warning) bool { return w.Check == "client_lag" })
	}
	e := &analyze.Experiment{Schema: analyze.ExperimentSchema, Workloads: []string{"synthetic", "sharegpt"}, Asked: analyze.ExperimentAsked{Soak: true},
		Configs: []analyze.ExperimentConfig{
			{Name: "seed", OK: true, Run: a, Workloads: []analyze.WorkloadRun{{Name: "synthetic", Run: a}, {Name: "sharegpt", Run: b}}},
			{Name: "seed-mtp", OK: true, Run: b},
		}}
	e.CompareConfigs([]int{1, 2})
	v := e.ComputeVerdicts()
	v.Fair.Withhold("not judged: seed/sweep: C=32 was measured on a starved simulator (17.7% of its steps late); the client lagged at C=1; rerun on a quieter machine")
	var out bytes.Buffer
	if err := Render(&out, "text", e); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	last := lines[len(lines)-4:]
	for i, x := range v.All() {
		if last[i] != x.Short() {
			t.Errorf("line %d from the end is %q, want the short verdict %q", 4-i, last[i], x.Short())
		}
		if n := len([]rune(last[i])); n > analyze.ShortMax || !strings.HasPrefix(last[i], x.Question+": ") {
			t.Errorf("%q: %d characters (at most %d), and it must name its question", last[i], n, analyze.ShortMax)
		}
		if !strings.Contains(out.String(), x.Line()) {
			t.Errorf("the details of %s are not above it", x.Question)
		}
	}
	if want := "fair: withheld — seed/sweep: C=32 was measured on a starved simulator (17.7% of its steps late)"; last[2] != want {
		t.Errorf("withheld: %q, want the first measured cause: %q", last[2], want)
	}
	// The fixture's stages are too short to tell the workloads apart: the
	// line says so, naming the level, instead of "no difference".
	if !strings.Contains(last[1], "seed-mtp / seed: C=1 ") || !strings.HasPrefix(last[0], "representative: cannot tell — C=") {
		t.Errorf("the short lines lack their key numbers:\n%s", strings.Join(last, "\n"))
	}
}

// A count in a heading is a word up to ten and digits past it: the
// experiment's "the four verdicts" is counted from Verdicts.All.
func TestNumber(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "no", 1: "one", 4: "four", 10: "ten", 11: "11", -1: "-1"} {
		if got := number(n); got != want {
			t.Errorf("number(%d) = %q, want %q", n, got, want)
		}
	}
}
