package cli

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
)

// preset is a published test shape: the flags it sets (those the user
// leaves unset), where its figures come from, and how a run of it is
// judged. Adding one is one entry of presets.
type preset struct {
	name, about string
	short       string // a few words, for tokperf help
	// detail are the lines tokperf help presets adds: each argument's meaning.
	detail func() []string
	source string // repository, path and commit the figures were read from
	// arg names what NAME:ARG takes ("pair", "model") and args its
	// values, the first the default unless required; "" and nil: none.
	arg      string
	args     []string
	required bool
	// settings are the flags the preset sets for arg, given the flags
	// as the user left them (the levels the user asked, the rate).
	settings func(arg string, f *loadFlags, fs *flagSet) ([]setting, error)
	// judge, minDuration and figures go to record.Preset: how the report
	// judges the run and which figures it adds.
	judge       string
	minDuration time.Duration
	figures     string
}

// setting is one flag a preset sets, by its long name, as typed.
type setting struct{ flag, value string }

// presets are the published test shapes --preset names.
var presets = []preset{
	{
		name:     "inferencex",
		short:    "SemiAnalysis InferenceX's sweep: published length pairs, C from 4 doubling",
		about:    "SemiAnalysis InferenceX (InferenceMAX): random prompts of a published input/output pair, uniform from 0.8× to 1× each, ignore_eos, on /v1/completions; concurrency doubling from 4 to --max-concurrency (64); 2×C warm-ups and 10×C prompts a level; figures: tok/s per GPU (--gpus) and interactivity 1000/TPOT per user",
		source:   "SemiAnalysisAI/InferenceX@843c6254ff69 benchmarks/benchmark_lib.sh, utils/process_result.py",
		arg:      "pair",
		args:     inferencexArgs,
		settings: inferencex,
		detail:   inferencexDetail,
		figures:  "interactivity",
	},
	{
		name:        "mlperf-server",
		short:       "MLPerf Inference's Server scenario at --rate, judged pass/fail",
		about:       "MLPerf Inference's Server scenario: Poisson arrivals at the target QPS you give (--rate), MLPerf's fixed seed, 600 s, and a pass/fail verdict on the model's p99 TTFT and TPOT limits (they set --slo-ttft and --slo-tpot, so goodput counts the requests within them)",
		source:      "mlcommons/inference@b66003e10e2d loadgen/mlperf.conf",
		arg:         "model",
		args:        mlperfModels(),
		required:    true,
		settings:    mlperfServer,
		detail:      mlperfDetail,
		judge:       "p99",
		minDuration: 600 * time.Second,
	},
	{
		name:     "agentic",
		short:    "InferenceX's agentic scenario: coding-agent sessions at -c concurrent sessions",
		about:    "SemiAnalysis InferenceX's agentic scenario (its agentx MVP, run by AIPerf): coding-agent sessions streamed on the chat route with their tools, a fixed number of concurrent sessions (-c), a first-turn cache-bust so only what sessions truly share is cached, seed 42; your --agent-trace FILE is replayed as the scenario replays its traces, else generated sessions of --agent's default shape with the bust; the report gives the session figures and the prefix-cache hit beside its ceiling",
		source:   "SemiAnalysisAI/InferenceX@843c6254ff69 benchmarks/benchmark_lib.sh (build_replay_cmd), benchmarks/single_node/agentic/",
		settings: agentic,
	},
}

// agentic is InferenceX's agentic scenario as build_replay_cmd runs it:
// aiperf profile --scenario inferencex-agentx-mvp --endpoint-type chat
// --streaming --concurrency $CONC --random-seed 42, the scenario locking
// --cache-bust first_turn_prefix. Its traces are the user's to give
// (--agent-trace), replayed without warm-up sessions; without one,
// generated sessions with the bust. Its 3600 s duration is not set: a
// stage of sessions ends with its sessions (--requests).
func agentic(_ string, f *loadFlags, fs *flagSet) ([]setting, error) {
	if !fs.Changed("concurrency") {
		return nil, fmt.Errorf("give the concurrent sessions with -c N (InferenceX's CONC)")
	}
	out := []setting{{"endpoint", "chat"}, {"seed", "42"}}
	if f.agentTrace == "" {
		return append(out, setting{"agent", "bust"}), nil
	}
	// A warm-up session of a trace is one of its sessions: replayed again
	// in the measurement, it would be served from the cache its warm-up
	// filled, and the hit would pass the trace's ceiling.
	return append(out, setting{"warmup", "0"}), nil
}

// inferencexArgs are the pairs inferencex takes, its default first.
var inferencexArgs = []string{"8k1k", "1k1k", "1k8k"}

// inferencexPairs are InferenceX's published input/output lengths.
var inferencexPairs = map[string][2]int{"1k1k": {1024, 1024}, "1k8k": {1024, 8192}, "8k1k": {8192, 1024}}

// inferencexTop is the highest level InferenceX's configs run
// (conc-end: 64) when --max-concurrency does not say.
const inferencexTop = 64

// inferencex is InferenceX's shape: vLLM's benchmark_serving with
// --dataset-name random --random-range-ratio 0.8 (lengths uniform from
// int(0.8×L) to L), --num-prompts CONC*10, --num-warmups 2*CONC,
// --ignore-eos and --backend vllm (completions), at each level.
func inferencex(arg string, f *loadFlags, fs *flagSet) ([]setting, error) {
	pair := inferencexPairs[arg]
	if fs.Lookup("max-concurrency") == nil && !fs.Changed("concurrency") {
		return nil, fmt.Errorf("run measures one level: give it with -c (InferenceX's levels double from 4 to %d: tokperf sweep --preset inferencex)", inferencexTop)
	}
	top := inferencexTop
	if fs.Changed("max-concurrency") {
		top = f.maxConc
	}
	if top < 4 {
		return nil, fmt.Errorf("--max-concurrency %d: InferenceX doubles concurrency from 4, so want 4 or more", top)
	}
	var own ints
	for c := 4; c <= top; c *= 2 {
		own = append(own, c)
	}
	levels := own
	if fs.Changed("concurrency") {
		levels = f.conc // 10×C prompts at the user's levels
	}
	var prompts []string
	for _, c := range levels {
		prompts = append(prompts, strconv.Itoa(10*c))
	}
	uniform := func(n int) string { return fmt.Sprintf("%d-%d", n*8/10, n) }
	return []setting{
		{"input-tokens", uniform(pair[0])}, {"output-tokens", uniform(pair[1])}, {"ignore-eos", "true"},
		{"endpoint", "completions"}, {"concurrency", own.String()}, {"requests", strings.Join(prompts, ",")},
		{"warmup", "2xC"},
	}, nil
}

// inferencexDetail is tokperf help presets' table of the pairs.
func inferencexDetail() []string {
	out := []string{"PAIR  input/output tokens (the default first: InferenceX's sweep since it dropped 1k8k)"}
	for _, a := range inferencexArgs {
		p := inferencexPairs[a]
		out = append(out, fmt.Sprintf("%-5s %d / %d", a, p[0], p[1]))
	}
	return out
}

// mlperfDetail is tokperf help presets' table of the models' limits.
func mlperfDetail() []string {
	out := []string{fmt.Sprintf("%-26s %-9s %s", "MODEL", "p99 TTFT", "p99 TPOT")}
	for _, l := range mlperfLimits {
		out = append(out, fmt.Sprintf("%-26s %-9s %s", l.model, l.ttft, l.tpot))
	}
	return out
}

// mlperfLimit is one model's p99 limits in MLPerf Inference's Server
// scenario; conf is its name in mlperf.conf.
type mlperfLimit struct {
	model, conf string
	ttft, tpot  time.Duration
}

// mlperfLimits are loadgen/mlperf.conf's MODEL.Server.ttft_latency and
// tpot_latency (ms), the "-interactive" rows its interactive settings.
var mlperfLimits = []mlperfLimit{
	{"llama2-70b", "llama2-70b", 2000 * time.Millisecond, 200 * time.Millisecond},
	{"llama2-70b-interactive", "llama2-70b-interactive", 450 * time.Millisecond, 40 * time.Millisecond},
	{"mixtral-8x7b", "mixtral-8x7b", 2000 * time.Millisecond, 200 * time.Millisecond},
	{"llama3.1-405b", "llama3_1-405b", 6000 * time.Millisecond, 175 * time.Millisecond},
	{"llama3.1-405b-interactive", "llama3_1-405b-interactive", 4500 * time.Millisecond, 80 * time.Millisecond},
	{"llama3.1-8b", "llama3_1-8b", 2000 * time.Millisecond, 100 * time.Millisecond},
	{"llama3.1-8b-interactive", "llama3_1-8b-interactive", 500 * time.Millisecond, 30 * time.Millisecond},
	{"deepseek-r1", "deepseek-r1", 2000 * time.Millisecond, 80 * time.Millisecond},
	{"deepseek-r1-interactive", "deepseek-r1-interactive", 1500 * time.Millisecond, 15 * time.Millisecond},
	{"gpt-oss-120b", "gpt-oss-120b", 3000 * time.Millisecond, 80 * time.Millisecond},
	{"gpt-oss-120b-interactive", "gpt-oss-120b-interactive", 2000 * time.Millisecond, 15 * time.Millisecond},
}

// mlperfSeed is mlperf.conf's *.*.qsl_rng_seed: tokperf's one seed of
// prompts and arrivals (its schedule_rng_seed does not fit an int64).
const mlperfSeed = "2085463073848966840"

// mlperfModels are the models mlperf-server takes, as typed.
func mlperfModels() []string {
	var out []string
	for _, l := range mlperfLimits {
		out = append(out, l.model)
	}
	return out
}

// mlperfServer is MLPerf's Server scenario for a model: Poisson arrivals
// at the target QPS the user gives, the fixed seed, min_duration, and the
// model's limits as the SLO the verdict reads at p99.
func mlperfServer(arg string, f *loadFlags, fs *flagSet) ([]setting, error) {
	if len(f.rates) == 0 {
		return nil, fmt.Errorf("give the target QPS with --rate QPS (MLPerf's target_qps: the Server scenario is an open loop)")
	}
	i := slices.IndexFunc(mlperfLimits, func(l mlperfLimit) bool { return l.model == arg })
	l := mlperfLimits[i]
	return []setting{
		{"arrival", "poisson"}, {"seed", mlperfSeed}, {"duration", (600 * time.Second).String()},
		{"slo-ttft", l.ttft.String()}, {"slo-tpot", l.tpot.String()},
	}, nil
}

// presetNames are the presets as --preset takes them, NAME[:ARG].
func presetNames() string {
	var out []string
	for _, p := range presets {
		out = append(out, p.usage())
	}
	return strings.Join(out, ", ")
}

// usage is how --preset takes p: inferencex[:PAIR], mlperf-server:MODEL.
func (p *preset) usage() string {
	switch {
	case p.arg == "":
		return p.name
	case p.required:
		return p.name + ":" + strings.ToUpper(p.arg)
	}
	return p.name + "[:" + strings.ToUpper(p.arg) + "]"
}

// lookupPreset is the preset spec names and its argument, or an error
// listing the known ones.
func lookupPreset(spec string) (*preset, string, error) {
	name, arg, _ := strings.Cut(spec, ":")
	i := slices.IndexFunc(presets, func(p preset) bool { return p.name == strings.ToLower(name) })
	if i < 0 {
		var names []string
		for _, p := range presets {
			names = append(names, p.name)
		}
		hint := ""
		if near := closest(strings.ToLower(name), names); near != "" {
			hint = ": did you mean " + near + "?"
		}
		return nil, "", usagef("--preset %q: no such preset%s (want %s)", spec, hint, presetNames())
	}
	p := &presets[i]
	arg = strings.ReplaceAll(strings.ToLower(arg), "3_1", "3.1") // mlperf.conf's spelling of llama3.1
	switch {
	case arg == "" && p.required:
		return nil, "", usagef("--preset %s needs a %s: %s, %s one of %s", p.name, p.arg, p.usage(), strings.ToUpper(p.arg), strings.Join(p.args, ", "))
	case arg == "" && len(p.args) > 0:
		arg = p.args[0]
	case arg != "" && p.arg == "":
		return nil, "", usagef("--preset %s takes no argument, not %q", p.name, arg)
	case p.arg == "":
		// takes none
	case !slices.Contains(p.args, arg):
		return nil, "", usagef("--preset %s: no %s %q (want one of %s)", p.name, p.arg, arg, strings.Join(p.args, ", "))
	}
	return p, arg, nil
}

// presetVerdict is exit 4 when a verdict of the run's preset failed; the
// report's verdict line says why.
func presetVerdict(run *analyze.Run) error {
	if run.Shape.Failed() {
		return fmt.Errorf("preset %s: %w", run.Shape.Preset, errCheckFailed)
	}
	return nil
}

// registerPreset adds --preset.
func registerPreset(fs *flagSet, spec *string) {
	fs.StringVar(spec, "preset", "", "a published test shape: "+presetNames()+"; it sets the flags you leave unset, and the header says which (tokperf help presets)")
}

// applyPreset sets the flags --preset sets that the command line and
// --config left unset, and keeps for the header what it set and which of
// the user's flags won.
func (f *loadFlags) applyPreset(fs *flagSet) error {
	if f.preset == "" {
		return nil
	}
	p, arg, err := lookupPreset(f.preset)
	if err != nil {
		return err
	}
	name := p.name
	if arg != "" {
		name += ":" + arg
	}
	settings, err := p.settings(arg, f, fs)
	if err != nil {
		return usagef("--preset %s: %v", name, err)
	}
	rec := &record.Preset{Name: name, Source: p.source, Judge: p.judge, MinDurationS: p.minDuration.Seconds(), Figures: p.figures}
	for _, s := range settings {
		flag := fs.Lookup(s.flag)
		given := fs.Changed(s.flag) || fs.Changed(vllmGives[s.flag])
		switch {
		case flag == nil:
			continue // not a flag of this command
		case given && flag.Value.String() != s.value:
			rec.Kept = append(rec.Kept, fmt.Sprintf("--%s %s (preset: %s)", s.flag, flag.Value, s.value))
			continue
		case !given:
			if err := fs.Set(s.flag, s.value); err != nil {
				return fmt.Errorf("--preset %s sets --%s %s: %w", name, s.flag, s.value, err)
			}
		}
		rec.Set = append(rec.Set, "--"+s.flag+" "+s.value)
	}
	f.presetSet = rec
	f.concSet = f.concSet || fs.Changed("concurrency")
	return nil
}

// vllmGives are tokperf's flags that vLLM's translated flags set
// (vllmFlags.apply, which runs first): given under vLLM's name, they are
// the user's, and win over a preset's.
var vllmGives = map[string]string{"endpoint": "backend", "rate": "request-rate"}

// presetsHelp is tokperf help presets: each preset, what it sets and
// where its figures come from.
func presetsHelp() string {
	var b strings.Builder
	b.WriteString("Presets: published test shapes for run and sweep (--preset NAME[:ARG], or preset: in an\n")
	b.WriteString("experiment's sweep: block). A preset sets the flags you leave unset; yours win, and the\n")
	b.WriteString("header of every format says what it set, what you kept, and where its figures come from.\n")
	for _, p := range presets {
		fmt.Fprintf(&b, "\n  --preset %s\n", p.usage())
		for _, l := range wrap(p.about, 90) {
			fmt.Fprintf(&b, "      %s\n", l)
		}
		if p.detail != nil {
			for _, l := range p.detail() {
				fmt.Fprintf(&b, "      %s\n", l)
			}
		}
		for _, l := range wrap("source: "+p.source, 90) {
			fmt.Fprintf(&b, "      %s\n", l)
		}
	}
	b.WriteString("\nExamples:\n")
	b.WriteString("  tokperf sweep --url http://127.0.0.1:8000 --preset inferencex:1k1k --max-concurrency 128 --gpus 8\n")
	b.WriteString("  tokperf run --url http://127.0.0.1:8000 --preset mlperf-server:llama2-70b --rate 12\n")
	return b.String()
}

// presetsSummary is the presets' part of tokperf help.
func presetsSummary() string {
	var b strings.Builder
	b.WriteString("\nPresets (run and sweep --preset; tokperf help presets: what each sets, and from where):\n")
	for _, p := range presets {
		fmt.Fprintf(&b, "  %-26s %s\n", p.usage(), p.short)
	}
	return b.String()
}

// wrap cuts s into lines of at most width characters, at spaces.
func wrap(s string, width int) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
			out = append(out, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(out, line)
}
