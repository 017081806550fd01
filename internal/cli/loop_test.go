package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/experiment"
)

// The seed's whole loop, examples/seed-loop.yaml as shipped (free ports in
// place of its own, and a shorter soak and overhead), end to end with the
// real binary: per configuration start, ready, check (report mode), two
// workloads, overhead, a soak, stop and a free port; then the comparison
// and the four verdicts, exit 0. The figures are checked against what the
// simulator's profiles are known to do (MTP wins at C=1, and less at C=32)
// and against the run's own numbers.
//
// Serial: real time, about 45 s: two simulator processes on real sockets.
func TestExperimentSeedLoop(t *testing.T) {
	bin := buildBinary(t)
	root := filepath.Join(pkgDir, "..", "..")
	src, err := os.ReadFile(filepath.Join(root, "examples", "seed-loop.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	a, b := freePort(t), freePort(t)
	// The soak keeps its eight slices, a second each: every path of the
	// 24 s one at a third of the wait. The overhead runs 8 pairs of short
	// answers a level: it compares the routes, not the decode. Each
	// replacement must find its lines, or the test is not the example's
	// any more.
	var replaced []string
	for _, r := range [][2]string{
		{"127.0.0.1:30111", a}, {"127.0.0.1:30112", b},
		{"  duration: 24s\n  slice: 3s\n", "  duration: 8s\n  slice: 1s\n"},
		{"  requests: 16\n  output_tokens: 50\n", "  requests: 8\n  output_tokens: 10\n"},
	} {
		if !strings.Contains(string(src), r[0]) {
			t.Fatalf("examples/seed-loop.yaml no longer holds %q: update this test", r[0])
		}
		replaced = append(replaced, r[0], r[1])
	}
	yaml := strings.NewReplacer(replaced...).Replace(string(src))
	file := filepath.Join(t.TempDir(), "seed-loop.yaml")
	os.WriteFile(file, []byte(yaml), 0o644)
	cmd := exec.Command(bin, "experiment", file, "-o", filepath.Join(t.TempDir(), "out"), "--format", "json")
	cmd.Dir = root // the example names its dataset from the repository's root
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("experiment: %v\n%s", err, stderr.String())
	}
	var res struct {
		Configs []struct {
			Name, Result string
			OK           bool
			Check        *struct{ Passed bool }
			Workloads    []struct {
				Name string
				Run  *struct {
					Setup struct {
						Workload struct {
							DistinctPrompts int `json:"distinct_prompts"`
						}
					}
					Stages []struct {
						Concurrency   int     `json:"concurrency"`
						AggregateTokS float64 `json:"aggregate_tok_s"`
					}
				}
			}
			Overhead *struct{ Levels []struct{} }
			Soak     *struct {
				Stages []struct{ Stability *struct{ Kind string } }
			}
		}
		Levels []struct {
			Concurrency int
			Best        string
			Cells       []struct {
				Ratio    *float64
				Base     bool
				Withheld string
			}
		}
		Verdicts map[string]struct {
			Answer, Text, Withheld string
			RestsOn                []string `json:"rests_on"`
			Figures                []struct {
				Config, Name string
				Concurrency  int
				Value        float64
				Lo, Hi       *float64
				Significant  *bool
			}
		}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res.Configs) != 2 {
		t.Fatalf("%d configurations", len(res.Configs))
	}
	agg32 := map[string]float64{}
	for _, c := range res.Configs {
		switch {
		case !c.OK || c.Check == nil:
			t.Errorf("%s: ok %v, check %v", c.Name, c.OK, c.Check)
		case len(c.Workloads) != 2 || c.Workloads[0].Run == nil || c.Workloads[1].Run == nil:
			t.Errorf("%s: workloads %+v", c.Name, c.Workloads)
		case c.Overhead == nil || len(c.Overhead.Levels) != 2:
			t.Errorf("%s: overhead %+v", c.Name, c.Overhead)
		case c.Soak == nil || len(c.Soak.Stages) != 1 || c.Soak.Stages[0].Stability == nil:
			t.Errorf("%s: soak %+v", c.Name, c.Soak)
		default:
			for _, st := range c.Workloads[0].Run.Stages {
				if st.Concurrency == 32 {
					agg32[c.Name] = st.AggregateTokS
				}
			}
		}
	}
	// Every server is gone and its port free.
	for _, addr := range []string{a, b} {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			t.Errorf("%s still accepts connections", addr)
		}
	}
	// On a busy machine a verdict may rest on a stage the simulator served
	// late or the client sent late: it is then withheld with that reason,
	// and its figures are not held to the profiles' shape.
	judged := map[string]bool{}
	for _, q := range []string{"representative", "configurations", "fair", "stable"} {
		v := res.Verdicts[q]
		// A soak of seconds may be too short to tell stable from a drift
		// of 10%: then it says so with the interval's reach.
		if v.Answer == "" || v.Answer == "not asked" || len(v.RestsOn) == 0 || len(v.Figures) == 0 || !strings.HasPrefix(v.Text, q+":") {
			t.Errorf("%s: %+v", q, v)
		}
		// A verdict withheld for the machine's load may say "cannot
		// answer": that is the busy-machine tolerance, judged first.
		if v.Withheld != "" {
			if !withheldForLoad(v.Withheld) {
				t.Errorf("%s withheld for a reason a busy machine does not explain: %s", q, v.Withheld)
			}
			t.Logf("%s not judged on this machine: %s", q, v.Withheld)
			continue
		}
		// Stages too short to tell are said as such: a soak too short to
		// judge, workloads whose intervals could not have seen 25%.
		tooShort := q == "stable" && v.Answer == "cannot answer" && strings.Contains(v.Text, "too short to judge: aggregate could have moved") ||
			q == "representative" && strings.HasPrefix(v.Text, "representative: cannot tell — C=")
		if v.Answer == "cannot answer" && !tooShort {
			t.Errorf("%s cannot answer, and not for the machine's load: %+v", q, v)
		}
		judged[q] = true
	}
	// The representative verdict rests on the shipped dataset's runs, each
	// of at least analyze.FewPrompts distinct prompts, and says how many
	// and how long they were.
	rep := res.Verdicts["representative"]
	m := regexp.MustCompile(`\[dataset self-instruct: (\d+) distinct prompts, prompt lengths p10 \d+, p50 \d+, p90 \d+, max \d+ tokens, output lengths p10`).FindStringSubmatch(rep.Text)
	if m == nil || !slices.Contains(rep.RestsOn, "seed/workload self-instruct") || !slices.Contains(rep.RestsOn, "seed-mtp/workload self-instruct") {
		t.Errorf("representative rests on %v and says %q: want the self-instruct runs and their distinct prompts and lengths", rep.RestsOn, rep.Text)
	} else if n, _ := strconv.Atoi(m[1]); n < analyze.FewPrompts {
		t.Errorf("representative rests on %d distinct prompts, want at least %d", n, analyze.FewPrompts)
	}
	for _, c := range res.Configs {
		for _, w := range c.Workloads {
			if w.Name == "self-instruct" && (w.Run == nil || w.Run.Setup.Workload.DistinctPrompts < analyze.FewPrompts) {
				t.Errorf("%s/%s: %+v, want at least %d distinct prompts in its setup", c.Name, w.Name, w.Run, analyze.FewPrompts)
			}
		}
	}
	if !judged["configurations"] {
		return
	}
	// MTP: the seed-mtp profile accepts about 2 tokens a step, so at C=1
	// it wins significantly, and its gain is smaller at C=32 than at C=1.
	// A level whose stages the machine's load made invalid is withheld
	// for it (the busy-machine tolerance, its reason checked): its
	// figures are then not held to the profiles' shape.
	withheldAt := map[int]string{}
	for _, lv := range res.Levels {
		for _, cell := range lv.Cells {
			if cell.Withheld == "" {
				continue
			}
			if !withheldForLoad(cell.Withheld) {
				t.Errorf("C=%d withheld for a reason a busy machine does not explain: %s", lv.Concurrency, cell.Withheld)
			}
			t.Logf("C=%d not judged on this machine: %s", lv.Concurrency, cell.Withheld)
			withheldAt[lv.Concurrency] = cell.Withheld
		}
	}
	var g1, g32 float64
	for _, f := range res.Verdicts["configurations"].Figures {
		switch f.Concurrency {
		case 1:
			g1 = f.Value
			if withheldAt[1] != "" {
				break
			}
			if f.Significant == nil || !*f.Significant || f.Lo == nil || *f.Lo <= 1 {
				t.Errorf("C=1: %+v: want a significant gain", f)
			}
		case 32:
			g32 = f.Value
		}
	}
	if g1 < 1.5 || g32 >= g1 {
		t.Errorf("MTP %.2f× at C=1, %.2f× at C=32: want a gain at C=1 that shrinks", g1, g32)
	}
	// The comparison table says the same: seed is the base, seed-mtp wins
	// C=1 by the verdict's ratio, and at C=32 it gains less (or is ~).
	if len(res.Levels) != 2 {
		t.Fatalf("%d comparison levels, want 2", len(res.Levels))
	}
	for _, lv := range res.Levels {
		if len(lv.Cells) != 2 || !lv.Cells[0].Base {
			t.Errorf("C=%d: cells %+v, want seed as the base and seed-mtp", lv.Concurrency, lv.Cells)
			continue
		}
		r := lv.Cells[1].Ratio
		switch lv.Concurrency {
		case 1:
			if withheldAt[1] != "" {
				break
			}
			if lv.Best != "seed-mtp" || r == nil || math.Abs(*r-g1) > 1e-9 {
				t.Errorf("C=1: best %q, ratio %v: want seed-mtp at %.4f×", lv.Best, r, g1)
			}
		case 32:
			if r != nil && *r >= g1 {
				t.Errorf("C=32: seed-mtp %.2f×, not less than at C=1 (%.2f×)", *r, g1)
			}
		}
	}
	if !judged["fair"] {
		return
	}
	// Fair: the arithmetic is the run's own C=32 aggregate over the
	// baseline's 1373 tok/s on 4 GPUs, per GPU with the file's 8.
	for _, f := range res.Verdicts["fair"].Figures {
		want := agg32[f.Config] / 1373
		if f.Name == "per_gpu_ratio" {
			want = (agg32[f.Config] / 8) / (1373.0 / 4)
		}
		if f.Concurrency != 32 || math.Abs(f.Value-want) > 1e-9*want {
			t.Errorf("fair %+v: want %.4f", f, want)
		}
	}
	if !strings.Contains(res.Verdicts["fair"].Text, "the claim 3×") {
		t.Errorf("fair: the claim is not checked: %s", res.Verdicts["fair"].Text)
	}
}

// In report mode a configuration that answers wrongly is measured and
// compared all the same, its failed check shown.
func TestExperimentCheckReportMode(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	var yaml strings.Builder
	yaml.WriteString("configs:\n")
	for _, c := range []struct{ name, extra string }{{"good", ""}, {"wrong", "wire: {wrong_answers: true}\n"}} {
		p := filepath.Join(dir, c.name+".yaml")
		os.WriteFile(p, []byte("name: "+c.name+"\nmodel: m\ndecode: {linear: {a_ms: 1, c_ms: 0}}\nprefill: {per_token_us: 1}\n"+c.extra), 0o644)
		addr := freePort(t)
		fmt.Fprintf(&yaml, "  - name: %s\n    command: [\"${TOKPERF}\", \"sim\", \"--profile\", %q, \"--addr\", %q]\n    url: http://%s\n    ready_timeout_s: 20\n    grace_s: 2\n", c.name, p, addr, addr)
	}
	yaml.WriteString("sweep:\n  concurrency: [1, 4]\n  requests: 8\n  output_tokens: 20\ncheck:\n  mode: report\n  questions: 8\n  smoke: false\n")
	file := filepath.Join(dir, "exp.yaml")
	os.WriteFile(file, []byte(yaml.String()), 0o644)
	out, err := exec.Command(bin, "experiment", file, "-o", filepath.Join(dir, "out")).CombinedOutput()
	if err != nil {
		t.Fatalf("experiment: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"wrong: ok;",
		"check FAILED (check mode report: measured and compared all the same): accuracy",
		"the check failed; check mode is report",
		"| 4 | ",
		"representative: not asked — give two workloads",
		"fair: not asked",
		"stable: not measured — give soak:",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The comparison is given, or withheld because this busy machine
	// starved the simulator or the client.
	if i := strings.Index(text, "configurations: withheld — not judged: "); i >= 0 {
		if !withheldForLoad(text[i:]) {
			t.Errorf("configurations withheld for another reason:\n%s", text[i:])
		}
	} else if !strings.Contains(text, "configurations: wrong / good aggregate tok/s: C=1 ") {
		t.Error("output lacks the configurations' verdict")
	}
	// smoke: false leaves out the sensible-output prompts: only questions.
	if strings.Contains(text, "FAIL sensible output") {
		t.Error("smoke: false still ran the smoke check")
	}
	if t.Failed() {
		t.Log(text)
	}
}

// The file's sweep keys are the sweep's flags, kebab or snake case, a
// configuration's and a workload's over the file's; bad keys are told with
// the file's line before any server starts.
func TestExperimentKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := filepath.Join(pkgDir, "..", "workload", "testdata", "sharegpt.json")
	head := "configs:\n  - name: a\n    command: [x]\n    url: http://127.0.0.1:1\n    sweep:\n      seed: 9\n      extra-body: {top_p: 0.5}\n  - name: b\n    command: [x]\n    url: http://127.0.0.1:2\n"
	good := head + "defaults:\n  concurrency: [2, 8]\n  output_tokens: 30\n  max_stage_s: 4\n  ignore_eos: false\nworkloads:\n  - name: words\n  - name: sharegpt\n    dataset: " + data + "\n    output-tokens: 40\noverhead:\n  concurrency: [1]\n"
	f, err := experiment.Parse(filepath.Join(dir, "x.yaml"), []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := experimentPlan(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plan.Levels, []int{2, 8}) || len(plan.Configs) != 2 {
		t.Fatalf("levels %v, %d configurations", plan.Levels, len(plan.Configs))
	}
	// The overhead takes the sweep's lengths and the configuration's extra
	// body, its own levels, and neither the sweep's levels nor its endpoint.
	if o := plan.Configs[0].Overhead; o == nil || !reflect.DeepEqual(o.Levels, []int{1}) || o.Workload.OutputTokens != 30 || len(o.Target.ExtraBody) != 1 || o.Workload.Seed != 9 {
		t.Errorf("overhead %+v", o)
	}
	for _, tc := range []struct {
		name     string
		cfg, wl  int
		seed     int64
		out      int
		prompts  bool
		extraLen int
	}{
		{"a words", 0, 0, 9, 30, false, 1},
		{"a sharegpt", 0, 1, 9, 40, true, 1},
		{"b words", 1, 0, 1, 30, false, 0},
	} {
		wp := plan.Configs[tc.cfg].Workloads[tc.wl]
		cfg, err := wp.Build(wp.Seed)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if cfg.Prompts != nil {
			cfg.Prompts.Close()
		}
		if wp.Seed != tc.seed || cfg.Load.Seed != tc.seed || cfg.Workload.OutputTokens != tc.out || cfg.Workload.IgnoreEOS ||
			(cfg.Prompts != nil) != tc.prompts || len(cfg.Target.ExtraBody) != tc.extraLen || cfg.Load.MaxStageTime != 4*time.Second {
			t.Errorf("%s: seed %d/%d, output %d, ignore EOS %v, prompts %v, extra body %d, max stage %v", tc.name, wp.Seed, cfg.Load.Seed, cfg.Workload.OutputTokens,
				cfg.Workload.IgnoreEOS, cfg.Prompts != nil, len(cfg.Target.ExtraBody), cfg.Load.MaxStageTime)
		}
	}
	for _, tc := range []struct{ name, tail, want string }{
		{"unknown key", "sweep:\n  output_tokns: 3\n", "x.yaml:12: sweep.output_tokns: not a flag of tokperf sweep: did you mean output-tokens?"},
		{"bad value", "sweep:\n  concurrency: [1, 0]\n", `x.yaml:12: sweep.concurrency: "1,0"`},
		{"the url is the configuration's", "sweep:\n  url: http://x:1\n", "x.yaml:12: sweep.url: each configuration's url: sets it"},
		{"in a configuration", "", "x.yaml:6: configs[0].sweep.seed"},
		{"a soak of several levels", "soak:\n  concurrency: [1, 2]\n  duration: 60s\n  slice: 5s\n", "soak: one level"},
		{"a soak too short", "soak:\n  duration: 10s\n  slice: 5s\n", "at least 6 slices"},
		{"no such baseline", "baseline:\n  name: nobody\n", `x.yaml:12: baseline.name: no baseline "nobody"`},
		{"a missing dataset", "sweep:\n  dataset: " + filepath.Join(dir, "none.json") + "\n", "none.json"},
	} {
		yaml := head + tc.tail
		if tc.name == "in a configuration" {
			yaml = strings.Replace(head, "seed: 9", "seed: -1", 1)
		}
		f, err := experiment.Parse(filepath.Join(dir, "x.yaml"), []byte(yaml))
		if err == nil {
			_, err = experimentPlan(context.Background(), f)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// Every key of the experiment file's schema, and every flag its sweep
// blocks take, is in tokperf help experiment by the name --config accepts.
func TestExperimentHelpListsEveryKey(t *testing.T) {
	t.Parallel()
	out, _, code := runCLI(t, "help", "experiment")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var keys []string
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice {
			ty = ty.Elem()
		}
		if ty.Kind() != reflect.Struct {
			return
		}
		for i := range ty.NumField() {
			fl := ty.Field(i)
			if tag := strings.Split(fl.Tag.Get("yaml"), ",")[0]; tag != "" && tag != "-" {
				keys = append(keys, tag)
				walk(fl.Type)
			}
		}
	}
	walk(reflect.TypeFor[experiment.File]())
	if len(keys) < 30 {
		t.Fatalf("found only %d keys: %v", len(keys), keys)
	}
	fs := newFlags("sweep")
	var f loadFlags
	f.register(fs, "sweep")
	keys = append(keys, "concurrency", "dataset", "tokenizer", "extra-body", "header", "cache-prompt", "seed", "duration", "slice", "input-tokens", "endpoint")
	for _, k := range keys {
		if !strings.Contains(out, k) {
			t.Errorf("tokperf help experiment lacks %q", k)
		}
	}
}

// Every example experiment file loads and its sweeps build.
//
// Serial: t.Chdir.
func TestExampleExperimentsParse(t *testing.T) {
	root := filepath.Join(pkgDir, "..", "..")
	t.Chdir(root)
	files, _ := filepath.Glob("examples/*.yaml")
	n := 0
	for _, p := range files {
		b, _ := os.ReadFile(p)
		if !strings.HasPrefix(string(b), "configs:") && !strings.Contains(string(b), "\nconfigs:") {
			continue
		}
		n++
		f, err := experiment.Load(p)
		if err == nil {
			_, err = experimentPlan(context.Background(), f)
		}
		if err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if n < 3 {
		t.Errorf("%d experiment examples, want seed-loop, two-servers and mtp-ab", n)
	}
}

// --config and config print take snake case as the experiment file does:
// input_tokens is --input-tokens.
func TestConfigSnakeCase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.yaml")
	os.WriteFile(path, []byte("input_tokens: 512\nmax_stage_time: 5s\n"), 0o644)
	out, errw, code := runCLI(t, "config", "print", "--config", path)
	if code != 0 || !strings.Contains(out, "\ninput-tokens: 512\n") || !strings.Contains(out, "\nmax-stage-time: 5s\n") {
		t.Errorf("exit %d: %s\n%s", code, out, errw)
	}
}

// baseline: file: makes another tool's result file the baseline, its
// closed-loop levels the points compared.
func TestExperimentBaselineFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(pkgDir, "..", "foreign", "testdata", "guidellm-benchmarks.json")
	yaml := "configs:\n  - name: a\n    command: [x]\n    url: http://127.0.0.1:1\nbaseline:\n  file: " + file + "\n"
	f, err := experiment.Parse("x.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := experimentPlan(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	run, err := bench.ReadRun(context.Background(), file, false)
	if err != nil {
		t.Fatal(err)
	}
	b := plan.Baseline
	if b == nil || b.Name != file || len(b.Points) == 0 {
		t.Fatalf("baseline %+v", b)
	}
	for _, p := range b.Points {
		st := run.Find(analyze.StageKey{Concurrency: p.Concurrency})
		if st == nil || st.AggregateTokS != p.AggregateTokS {
			t.Errorf("point %+v: the file's stage %+v", p, st)
		}
	}
}

// withheldForLoad says a verdict was withheld for what a busy machine
// causes: a starved simulator, a lagging client, or a kernel that dropped
// and resent packets.
func withheldForLoad(why string) bool {
	return strings.Contains(why, "'s simulator ran") || strings.Contains(why, "the client lagged") ||
		strings.Contains(why, "the client made") || strings.Contains(why, "the client read") ||
		strings.Contains(why, "the client's connections resent")
}

// An experiment one of whose configurations cannot start, the other
// passing, exits 3 and names the one that failed (it exited 0).
func TestExperimentSomeConfigFailed(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "good.yaml")
	os.WriteFile(p, []byte("name: good\nmodel: m\ndecode: {linear: {a_ms: 1, c_ms: 0}}\nprefill: {per_token_us: 1}\n"), 0o644)
	good, broken := freePort(t), freePort(t)
	yaml := fmt.Sprintf("configs:\n  - name: good\n    command: [\"${TOKPERF}\", \"sim\", \"--profile\", %q, \"--addr\", %q]\n    url: http://%s\n    ready_timeout_s: 20\n    grace_s: 2\n"+
		"  - name: broken\n    command: [\"exit 7\"]\n    shell: true\n    url: http://%s\n    ready_timeout_s: 20\n    grace_s: 2\n"+
		"sweep:\n  concurrency: [1]\n  requests: 4\n  output_tokens: 10\ncheck:\n  mode: report\n  questions: 2\n  smoke: false\n", p, good, good, broken)
	file := filepath.Join(dir, "exp.yaml")
	os.WriteFile(file, []byte(yaml), 0o644)
	out, err := exec.Command(bin, "experiment", file, "-o", filepath.Join(dir, "out")).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitSomeFailed || !strings.Contains(string(out), "1 of 2 configurations failed: broken") {
		t.Errorf("experiment: %v, want exit %d naming broken\n%s", err, exitSomeFailed, out)
	}
}
