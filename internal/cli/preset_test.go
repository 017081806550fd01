package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/experiment"
	"github.com/tokperf/tokperf/internal/report"
)

// checkedPreset parses and checks a command's flags as tokperf does, and
// returns them.
func checkedPreset(t *testing.T, cmd string, args ...string) (*loadFlags, error) {
	t.Helper()
	fs := newFlags(cmd)
	var f loadFlags
	f.register(fs, cmd)
	if err := parse(fs, args, &env{}); err != nil {
		t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return &f, f.check(fs)
}

// Each preset sets the flags it says, the user's own flags win and are
// named as kept, and the record lists both.
func TestPresetSetsItsFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, cmd string
		args      []string
		set, kept []string
		check     func(*loadFlags) string
	}{
		{"inferencex default pair", "sweep", []string{"--preset", "inferencex"},
			[]string{"--input-tokens 6553-8192", "--output-tokens 819-1024", "--ignore-eos true", "--endpoint completions",
				"--concurrency 4,8,16,32,64", "--requests 40,80,160,320,640", "--warmup 2xC"}, nil,
			func(f *loadFlags) string {
				if f.inputTokens.spec != "6553-8192" || f.outputTokens.spec != "819-1024" || !slices.Equal(f.conc, ints{4, 8, 16, 32, 64}) ||
					!slices.Equal(f.requests, counts{40, 80, 160, 320, 640}) || f.warmup != -2 || f.endpoint != "completions" {
					return fmt.Sprintf("in %s out %s c %v requests %v warmup %d endpoint %s", f.inputTokens.spec, f.outputTokens.spec, f.conc, f.requests, f.warmup, f.endpoint)
				}
				return ""
			}},
		{"inferencex 1k8k up to 16", "sweep", []string{"--preset", "inferencex:1k8k", "--max-concurrency", "16"},
			[]string{"--input-tokens 819-1024", "--output-tokens 6553-8192", "--concurrency 4,8,16", "--requests 40,80,160"}, nil,
			func(f *loadFlags) string {
				if !slices.Equal(f.conc, ints{4, 8, 16}) {
					return fmt.Sprintf("c %v", f.conc)
				}
				return ""
			}},
		{"inferencex, the user's level and lengths", "run", []string{"--preset", "inferencex:1k1k", "-c", "16", "--output-tokens", "100", "--endpoint", "chat"},
			[]string{"--input-tokens 819-1024", "--requests 160", "--warmup 2xC"},
			[]string{"--output-tokens 100 (preset: 819-1024)", "--endpoint chat (preset: completions)", "--concurrency 16 (preset: 4,8,16,32,64)"},
			func(f *loadFlags) string {
				if !slices.Equal(f.conc, ints{16}) || f.outputTokens.spec != "100" || f.endpoint != "chat" || !slices.Equal(f.requests, counts{160}) {
					return fmt.Sprintf("c %v out %s endpoint %s requests %v", f.conc, f.outputTokens.spec, f.endpoint, f.requests)
				}
				return ""
			}},
		{"vLLM's flags are the user's too", "sweep", []string{"--preset", "inferencex:1k1k", "--backend", "openai-chat", "--max-concurrency", "8"},
			[]string{"--concurrency 4,8", "--requests 40,80"}, []string{"--endpoint chat (preset: completions)"},
			func(f *loadFlags) string {
				if f.endpoint != "chat" || !slices.Equal(f.conc, ints{4, 8}) {
					return fmt.Sprintf("endpoint %s, c %v", f.endpoint, f.conc)
				}
				return ""
			}},
		{"mlperf at vLLM's --request-rate", "run", []string{"--preset", "mlperf-server:llama2-70b", "--request-rate", "3"},
			[]string{"--arrival poisson", "--slo-tpot 200ms"}, nil,
			func(f *loadFlags) string {
				if !slices.Equal(f.rates, floats{3}) {
					return fmt.Sprintf("rates %v", f.rates)
				}
				return ""
			}},
		{"mlperf llama2-70b", "run", []string{"--preset", "mlperf-server:llama2-70b", "--rate", "3"},
			[]string{"--arrival poisson", "--seed 2085463073848966840", "--duration 10m0s", "--slo-ttft 2s", "--slo-tpot 200ms"}, nil,
			func(f *loadFlags) string {
				if f.sloTTFT.Milliseconds() != 2000 || f.sloTPOT.Milliseconds() != 200 || f.duration.Seconds() != 600 || f.seed != 2085463073848966840 {
					return fmt.Sprintf("slo %v %v duration %v seed %d", f.sloTTFT, f.sloTPOT, f.duration, f.seed)
				}
				return ""
			}},
		{"mlperf llama3.1-405b in mlperf.conf's spelling, the user's TPOT limit", "sweep",
			[]string{"--preset", "mlperf-server:llama3_1-405b", "--rate", "1,2", "--slo-tpot", "150ms"},
			[]string{"--slo-ttft 6s"}, []string{"--slo-tpot 150ms (preset: 175ms)"},
			func(f *loadFlags) string {
				if f.sloTTFT.Milliseconds() != 6000 || f.sloTPOT.Milliseconds() != 150 {
					return fmt.Sprintf("slo %v %v", f.sloTTFT, f.sloTPOT)
				}
				return ""
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := checkedPreset(t, tc.cmd, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.set {
				if !slices.Contains(f.presetSet.Set, s) {
					t.Errorf("set %q missing from %q", s, f.presetSet.Set)
				}
			}
			if !slices.Equal(f.presetSet.Kept, tc.kept) {
				t.Errorf("kept %q, want %q", f.presetSet.Kept, tc.kept)
			}
			for _, k := range f.presetSet.Kept {
				flag, _, _ := strings.Cut(k, " ")
				if slices.ContainsFunc(f.presetSet.Set, func(s string) bool { return strings.HasPrefix(s, flag+" ") }) {
					t.Errorf("%s is both set and kept", flag)
				}
			}
			if msg := tc.check(f); msg != "" {
				t.Error(msg)
			}
		})
	}
}

// A preset that does not exist, an argument it does not take and a
// missing rate are clear errors that list what is known.
func TestPresetErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"unknown", []string{"--preset", "inferencemax"}, []string{`--preset "inferencemax": no such preset: did you mean inferencex?`, "inferencex[:PAIR], mlperf-server:MODEL"}},
		{"far from any", []string{"--preset", "spec-bench"}, []string{`--preset "spec-bench": no such preset (want inferencex[:PAIR], mlperf-server:MODEL, agentic)`}},
		{"unknown model", []string{"--preset", "mlperf-server:llama4", "--rate", "1"}, []string{`no model "llama4"`, "llama2-70b, llama2-70b-interactive, mixtral-8x7b", "gpt-oss-120b-interactive"}},
		{"no model", []string{"--preset", "mlperf-server", "--rate", "1"}, []string{"--preset mlperf-server needs a model: mlperf-server:MODEL", "deepseek-r1"}},
		{"unknown pair", []string{"--preset", "inferencex:2k2k"}, []string{`--preset inferencex: no pair "2k2k" (want one of 8k1k, 1k1k, 1k8k)`}},
		{"no rate", []string{"--preset", "mlperf-server:llama2-70b"}, []string{"give the target QPS with --rate QPS"}},
		{"top below 4", []string{"--preset", "inferencex", "--max-concurrency", "2"}, []string{"--max-concurrency 2: InferenceX doubles concurrency from 4"}},
		{"agentic without sessions", []string{"--preset", "agentic"}, []string{"give the concurrent sessions with -c N"}},
		{"agentic with an argument", []string{"--preset", "agentic:weka", "-c", "2"}, []string{`--preset agentic takes no argument, not "weka"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := checkedPreset(t, "sweep", tc.args...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// Through the command: exit 2 and the message on stderr.
	for _, tc := range []struct{ args, want []string }{
		{[]string{"run", "--preset", "mlperf-server:llama4", "--rate", "1"}, []string{`no model "llama4"`}},
		{[]string{"run", "--preset", "inferencex"}, []string{"run measures one level: give it with -c", "tokperf sweep --preset inferencex"}},
	} {
		_, errw, code := runCLI(t, tc.args...)
		for _, w := range tc.want {
			if code != exitUsage || !strings.Contains(errw, w) {
				t.Errorf("%v: exit %d, stderr %q lacks %q", tc.args, code, errw, w)
			}
		}
	}
}

// An experiment's sweep: block takes preset: as the sweep's flag, and
// its runs' setup records it.
func TestPresetInExperiment(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "e.yaml")
	yaml := "configs:\n  - name: a\n    command: [\"true\"]\n    url: http://127.0.0.1:1\nsweep:\n  preset: inferencex:1k1k\n  max_concurrency: 8\n"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	file, err := experiment.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := experimentPlan(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := plan.Configs[0].Workloads[0].Build(1)
	if err != nil {
		t.Fatal(err)
	}
	if p := cfg.Preset; p == nil || p.Name != "inferencex:1k1k" || !slices.Equal(cfg.Load.Concurrency, []int{4, 8}) || !slices.Equal(cfg.Load.RequestsPer, []int{40, 80}) || cfg.Load.Warmup != -2 {
		t.Errorf("preset %+v, load %+v", p, cfg.Load)
	}
}

// presetRun runs tokperf in virtual time and reads back its result file:
// the JSON model of the run, and each stage's warm-up count.
func presetRun(t *testing.T, args ...string) (run analyze.Run, warmups map[int]int, text string, code int) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "r.jsonl")
	out, errw, code := runVirtual(t, append(args, "--format", "json", "-o", file)...)
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatalf("exit %d: %v\nstdout:\n%s\nstderr:\n%s", code, err, out, errw)
	}
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	warmups = map[int]int{}
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r struct {
			Type   string
			Stage  int
			Warmup bool
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Type == "request" && r.Warmup {
			warmups[r.Stage]++
		}
	}
	text, _, _ = runCLI(t, "report", file)
	return run, warmups, text, code
}

// inferencex runs as it says on the simulator: its levels, 10×C measured
// and 2×C warm-up requests a level, lengths within 0.8× to 1× of the
// pair, and its figures are the run's own: total tok/s over the GPUs,
// 1000 over the median TPOT.
func TestPresetInferencexRuns(t *testing.T) {
	t.Parallel()
	run, warm, text, code := presetRun(t, "sweep", "--virtual", "--sim-profile", "tiny", "--preset", "inferencex:1k1k", "--max-concurrency", "8", "--gpus", "2")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	p := run.Setup.Preset
	if p == nil || p.Name != "inferencex:1k1k" || p.Figures != "interactivity" || !strings.Contains(p.Source, "SemiAnalysisAI/InferenceX@") {
		t.Fatalf("setup.preset %+v", p)
	}
	if len(run.Stages) != 2 || run.Shape == nil || len(run.Shape.Levels) != 2 {
		t.Fatalf("%d stages, shape %+v", len(run.Stages), run.Shape)
	}
	for i, s := range run.Stages {
		c := []int{4, 8}[i]
		if s.Concurrency != c || s.Requests != 10*c || warm[s.Index] != 2*c {
			t.Errorf("stage %d: C=%d, %d requests, %d warm-ups; want C=%d, %d and %d", i, s.Concurrency, s.Requests, warm[s.Index], c, 10*c, 2*c)
		}
		if mean := float64(s.OutputTokens) / float64(s.OK); mean < 819 || mean > 1024 {
			t.Errorf("C=%d: %.0f output tokens a request, outside 819..1024", c, mean)
		}
		l := run.Shape.Levels[i]
		if !near(l.TokSPerGPU, s.TotalTokS/2) || !near(l.OutputTokSPerGPU, s.AggregateTokS/2) || !near(l.InteractivityTokS, 1000/s.TPOT.P50) {
			t.Errorf("C=%d: figures %+v from total %.1f, output %.1f tok/s, TPOT p50 %.3f ms", c, l, s.TotalTokS, s.AggregateTokS, s.TPOT.P50)
		}
	}
	for _, want := range []string{"preset inferencex:1k1k: set --input-tokens 819-1024, --output-tokens 819-1024, --ignore-eos true", "source: SemiAnalysisAI/InferenceX@", "interactivity"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Abs(b) }

// mlperfProfile is a generated simulator profile: fast ones meet
// llama2-70b's limits at the test's rate by construction (a step is at
// most a + c×running + one prompt's prefill, far under 200 ms; nothing
// queues), slow ones miss one by construction (every decode step longer
// than 200 ms, or every prompt's prefill longer than 2 s).
type mlperfProfile struct {
	name              string
	aMs, cMs, prefUs  float64
	tpotFloor, tpotUp float64 // bounds on every request's TPOT, ms
	ttftFloor         float64 // bound under every request's TTFT, ms
}

func (p mlperfProfile) yaml() string {
	return fmt.Sprintf("name: %s\nengine: vllm\nmodel: m\nmax_running: 64\ndecode: {linear: {a_ms: %g, c_ms: %g}}\nprefill: {per_token_us: %g}\n", p.name, p.aMs, p.cMs, p.prefUs)
}

// mlperfProfiles are n profiles of each kind, drawn from seed.
func mlperfProfiles(seed uint64, n, prompt int) (fast, slow []mlperfProfile) {
	rng := rand.New(rand.NewPCG(seed, 39))
	for i := range n {
		a, c, pu := 5+35*rng.Float64(), 0.3*rng.Float64(), 10+90*rng.Float64()
		fast = append(fast, mlperfProfile{name: fmt.Sprintf("fast-%d", i), aMs: a, cMs: c, prefUs: pu,
			tpotFloor: a, tpotUp: a + 64*c + float64(prompt)*pu/1000})
		if i%2 == 0 { // TPOT over 200 ms
			a = 210 + 200*rng.Float64()
			slow = append(slow, mlperfProfile{name: fmt.Sprintf("slow-tpot-%d", i), aMs: a, cMs: c, prefUs: pu, tpotFloor: a})
		} else { // TTFT over 2 s: the prompt's prefill alone
			pu = 2100e3/float64(prompt) + 1000*rng.Float64()
			slow = append(slow, mlperfProfile{name: fmt.Sprintf("slow-ttft-%d", i), aMs: a, cMs: c, prefUs: pu, ttftFloor: float64(prompt) * pu / 1000})
		}
	}
	return fast, slow
}

// mlperf-server:llama2-70b's verdict passes on generated profiles that
// meet its limits by construction and fails on those that miss one, over
// the full 600 s in virtual time; the p99s it quotes lie within the
// bounds the profile sets, and exit 4 goes with a failure.
func TestPresetMLPerfVerdict(t *testing.T) {
	t.Parallel()
	const prompt, output = 200, 8
	fast, slow := mlperfProfiles(3939, 3, prompt)
	dir := t.TempDir()
	for _, tc := range append(fast, slow...) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(dir, tc.name+".yaml")
			if err := os.WriteFile(path, []byte(tc.yaml()), 0o644); err != nil {
				t.Fatal(err)
			}
			run, _, text, code := presetRun(t, "run", "--sim-profile", path, "--preset", "mlperf-server:llama2-70b", "--rate", "0.5",
				"--input-tokens", fmt.Sprint(prompt), "--output-tokens", fmt.Sprint(output))
			if run.Shape == nil || len(run.Shape.Verdicts) != 1 {
				t.Fatalf("exit %d, no verdict: %+v\n%s", code, run.Shape, text)
			}
			v := run.Shape.Verdicts[0]
			wantKind, wantCode := analyze.LimitPass, 0
			if strings.HasPrefix(tc.name, "slow") {
				wantKind, wantCode = analyze.LimitFail, exitVerdictFail
			}
			if v.Kind != wantKind || code != wantCode {
				t.Fatalf("%s (exit %d), want %s (exit %d): %s", v.Kind, code, wantKind, wantCode, v.Text)
			}
			if v.TTFTMaxMs != 2000 || v.TPOTMaxMs != 200 || v.Requests < 250 {
				t.Errorf("limits %g/%g ms over %d requests", v.TTFTMaxMs, v.TPOTMaxMs, v.Requests)
			}
			if v.TPOTP99Ms < tc.tpotFloor || (tc.tpotUp > 0 && v.TPOTP99Ms > tc.tpotUp) || v.TTFTP99Ms < tc.ttftFloor {
				t.Errorf("p99 TPOT %.1f ms outside [%.1f, %.1f], p99 TTFT %.1f ms under %.1f", v.TPOTP99Ms, tc.tpotFloor, tc.tpotUp, v.TTFTP99Ms, tc.ttftFloor)
			}
			t.Log(v.Text)
			line := "preset mlperf-server:llama2-70b, rate=0.5/s: " + v.Text
			if !strings.Contains(text, line) || !strings.Contains(text, "preset mlperf-server:llama2-70b: set --arrival poisson") {
				t.Errorf("text report lacks %q or the preset's header:\n%s", line, text)
			}
		})
	}
}

// A run shorter than the scenario's 600 s is not judged, and says why.
func TestPresetMLPerfShortIsNotJudged(t *testing.T) {
	t.Parallel()
	run, _, text, code := presetRun(t, "run", "--sim-profile", "tiny", "--preset", "mlperf-server:llama3.1-8b", "--rate", "20", "--duration", "10s", "--output-tokens", "8")
	if code != 0 || run.Shape == nil || len(run.Shape.Verdicts) != 1 {
		t.Fatalf("exit %d, shape %+v", code, run.Shape)
	}
	v := run.Shape.Verdicts[0]
	if v.Kind != analyze.LimitNotJudged || !strings.Contains(v.Text, "asked to last 10s; the scenario needs at least 600s") {
		t.Errorf("verdict %s: %s", v.Kind, v.Text)
	}
	if !slices.Contains(run.Setup.Preset.Kept, "--duration 10s (preset: 10m0s)") || !strings.Contains(text, "yours kept: --duration 10s (preset: 10m0s)") {
		t.Errorf("kept %q\n%s", run.Setup.Preset.Kept, text)
	}
	if !slices.ContainsFunc(run.Withheld(), func(s string) bool { return strings.Contains(s, "needs at least 600s") }) {
		t.Errorf("withheld %q", run.Withheld())
	}
}

// The preset's header line is in every format's header (csv has none:
// its rows are the figures alone), and its verdict in text, JSON and html.
func TestPresetInEveryFormat(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "r.jsonl")
	_, errw, code := runVirtual(t, "run", "--sim-profile", "tiny", "--preset", "mlperf-server:llama2-70b", "--rate", "20", "--duration", "5s", "--output-tokens", "8", "-o", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	header := "preset mlperf-server:llama2-70b: set --arrival poisson, --seed 2085463073848966840, --slo-ttft 2s, --slo-tpot 200ms; yours kept: --duration 5s (preset: 10m0s) (source: mlcommons/inference@"
	verdict := "not judged: the stage was asked to last 5s; the scenario needs at least 600s"
	for _, format := range report.Formats() {
		if format == "png" || format == "csv" {
			continue // pixels, the html page's; csv is the figures alone, no header
		}
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			out, errw, code := runCLI(t, "report", file, "--format", format)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errw)
			}
			if format == "json" {
				var run analyze.Run
				if err := json.Unmarshal([]byte(out), &run); err != nil {
					t.Fatal(err)
				}
				if got := report.PresetLine(run.Setup.Preset); got[:len(header)] != header || run.Shape.Verdicts[0].Text != verdict {
					t.Errorf("json: %s; %+v", got, run.Shape)
				}
				return
			}
			out = strings.ReplaceAll(out, "&#39;", "'")
			if !strings.Contains(out, header) {
				t.Errorf("%s lacks the preset's header %q:\n%s", format, header, out)
			}
			if (format == "text" || format == "html") && !strings.Contains(out, verdict) {
				t.Errorf("%s lacks the verdict %q", format, verdict)
			}
		})
	}
}

// presetsDoc is docs/workloads.md's table of the presets, generated from
// the table itself: what each sets (its default argument's settings) and
// where its figures come from, then MLPerf's limits per model.
func presetsDoc(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("| preset | what it is | what it sets (default argument) | source |\n|---|---|---|---|\n")
	for _, p := range presets {
		fs := newFlags("sweep")
		var f loadFlags
		f.register(fs, "sweep")
		f.rates = floats{1} // mlperf-server asks a rate: the user's
		arg := ""
		if len(p.args) > 0 {
			arg = p.args[0]
		}
		if p.name == "agentic" {
			fs.Set("concurrency", "8") // the user's sessions
		}
		settings, err := p.settings(arg, &f, fs)
		if err != nil {
			t.Fatalf("preset %s:%s: %v", p.name, arg, err)
		}
		var set []string
		for _, s := range settings {
			set = append(set, "`--"+s.flag+" "+s.value+"`")
		}
		args := ""
		if len(p.args) > 0 {
			args = "; " + strings.ToUpper(p.arg) + ": " + strings.Join(p.args, ", ")
		}
		if arg != "" {
			arg = " (" + arg + ")"
		}
		fmt.Fprintf(&b, "| `%s` | %s%s | %s%s | %s |\n", p.usage(), p.about, args, strings.Join(set, " "), arg, p.source)
	}
	b.WriteString("\nMLPerf Inference's Server-scenario limits (`mlperf-server:MODEL`), p99 over the run's measured requests:\n\n")
	b.WriteString("| MODEL | mlperf.conf name | p99 TTFT | p99 TPOT |\n|---|---|--:|--:|\n")
	for _, l := range mlperfLimits {
		fmt.Fprintf(&b, "| `%s` | `%s` | %d ms | %d ms |\n", l.model, l.conf, l.ttft.Milliseconds(), l.tpot.Milliseconds())
	}
	return b.String()
}

// docs/workloads.md's table of presets is the table tokperf has.
func TestPresetsDoc(t *testing.T) {
	t.Parallel()
	const begin, end = "<!-- presets: generated by `go test ./internal/cli -run TestPresetsDoc -update` -->\n", "<!-- end of presets -->"
	path := filepath.Join(root(), "docs", "workloads.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("docs/workloads.md lacks the lines %q and %q around the presets' table", begin, end)
	}
	want := doc[:i+len(begin)] + presetsDoc(t) + doc[j:]
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if doc != want {
		t.Errorf("docs/workloads.md's table of presets is not the one tokperf has: go test ./internal/cli -run TestPresetsDoc -update")
	}
	// tokperf help lists every preset.
	out, _, _ := runCLI(t, "help")
	presetsOut, _, _ := runCLI(t, "help", "presets")
	for _, p := range presets {
		if !strings.Contains(out, p.usage()) || !strings.Contains(presetsOut, "--preset "+p.usage()) || !strings.Contains(presetsOut, "source: "+strings.Fields(p.source)[0]) {
			t.Errorf("tokperf help or help presets lacks %s", p.usage())
		}
	}
}

// The agentic preset on the simulator, in virtual time: generated agent
// sessions with the first-turn bust on the chat route at -c sessions, its
// header saying so, the session figures in the report; with the user's
// own --agent shape kept.
func TestPresetAgenticRuns(t *testing.T) {
	t.Parallel()
	out, errw, code := runVirtual(t, "run", "--preset", "agentic", "-c", "2", "--requests", "2", "--sim-profile", "tiny", "-o", t.TempDir()+"/a.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errw)
	}
	for _, want := range []string{"preset agentic: set --endpoint chat, --seed 42, --agent bust (source: SemiAnalysisAI/InferenceX@",
		"vllm /v1/chat/completions", ",bust;", "agent sessions (a session is its turns"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	// A trace is replayed without warm-up sessions: they would be its own
	// sessions, cached for the measured replay.
	trace := filepath.Join(root(), "internal", "workload", "testdata", "agent", "weka.jsonl")
	out, errw, code = runVirtual(t, "run", "--preset", "agentic", "-c", "1", "--requests", "1", "--agent-trace", trace, "--sim-profile", "tiny", "-o", t.TempDir()+"/t.jsonl")
	if code != 0 || !strings.Contains(out, "preset agentic: set --endpoint chat, --seed 42, --warmup 0 (") {
		t.Errorf("exit %d, want the trace replayed without warm-up:\n%s\n%s", code, out, errw)
	}
	out, errw, code = runVirtual(t, "run", "--preset", "agentic", "-c", "1", "--requests", "1", "--agent", "turns=2,tools=0", "--sim-profile", "tiny", "-o", t.TempDir()+"/b.jsonl")
	if code != 0 || !strings.Contains(out, "yours kept: --agent turns=2,tools=0 (preset: bust)") {
		t.Errorf("exit %d, want the user's --agent kept:\n%s\n%s", code, out, errw)
	}
}
