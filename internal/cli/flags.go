package cli

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/infile"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/report"
	"github.com/tokperf/tokperf/internal/schedule"
	"github.com/tokperf/tokperf/internal/tokenizer"
	"github.com/tokperf/tokperf/internal/workload"
)

// ints is a comma-separated list of positive integers.
type ints []int

func (v *ints) String() string {
	var s []string
	for _, n := range *v {
		s = append(s, strconv.Itoa(n))
	}
	return strings.Join(s, ",")
}

func (v *ints) Type() string { return "ints" }

func (v *ints) Set(s string) error {
	*v = nil
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a positive integer", part)
		}
		if slices.Contains(*v, n) {
			return fmt.Errorf("%d is given twice", n)
		}
		*v = append(*v, n)
	}
	return nil
}

// counts is a comma-separated list of positive integers that may repeat:
// one value for every stage, or one per stage.
type counts []int

func (v *counts) String() string { return (*ints)(v).String() }

func (v *counts) Type() string { return "N[,N...]" }

func (v *counts) Set(s string) error {
	*v = nil
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 {
			return fmt.Errorf("%q is not a positive integer", part)
		}
		*v = append(*v, n)
	}
	return nil
}

// floats is a comma-separated list of positive numbers.
type floats []float64

func (v *floats) String() string {
	var s []string
	for _, n := range *v {
		s = append(s, strconv.FormatFloat(n, 'g', -1, 64))
	}
	return strings.Join(s, ",")
}

func (v *floats) Type() string { return "numbers" }

func (v *floats) Set(s string) error {
	*v = nil
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil || !(n > 0) || math.IsInf(n, 0) {
			return fmt.Errorf("%q is not a positive number", part)
		}
		*v = append(*v, n)
	}
	return nil
}

// waitReady is --wait-ready[=TIMEOUT]: alone it waits up to 10 minutes.
type waitReady time.Duration

func (w *waitReady) String() string {
	if *w == 0 {
		return "" // no default shown: it does not wait
	}
	return time.Duration(*w).String()
}

func (w *waitReady) Type() string { return "duration" }

func (w *waitReady) Set(s string) error {
	switch s {
	case "true", "10m":
		*w = waitReady(10 * time.Minute)
	case "false":
		*w = 0
	default:
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return fmt.Errorf("%q is not a positive duration", s)
		}
		*w = waitReady(d)
	}
	return nil
}

// warmups is --warmup: N requests a stage, or K rounds at the stage's
// concurrency, KxC (InferenceX's 2xC), kept as -K (-1: one round).
type warmups int

func (w *warmups) String() string {
	if *w < -1 {
		return fmt.Sprintf("%dxC", -*w)
	}
	return strconv.Itoa(int(*w))
}

func (w *warmups) Type() string { return "N|KxC" }

func (w *warmups) Set(s string) error {
	if k, ok := strings.CutSuffix(strings.ToLower(s), "xc"); ok {
		n, err := strconv.Atoi(k)
		if err != nil || n < 1 {
			return fmt.Errorf("%q: want K rounds at the stage's concurrency as KxC, e.g. 2xC", s)
		}
		*w = warmups(-n)
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q: want a number of requests, -1 (one round) or KxC (K rounds), e.g. 2xC", s)
	}
	*w = warmups(n) // -K, as a result file keeps K rounds
	return nil
}

// lengths is a token length or a distribution of them (workload.ParseLengths).
type lengths struct {
	spec string
	l    workload.Lengths
}

func (v *lengths) String() string { return v.spec }

func (v *lengths) Type() string { return "tokens" }

func (v *lengths) Set(s string) error {
	l, err := workload.ParseLengths(s)
	if err != nil {
		return err
	}
	v.spec, v.l = s, l
	return nil
}

// n is the fixed length, or the distribution's median or mean.
func (v *lengths) n() int {
	n, _ := v.l.Fixed()
	return n
}

// targetFlags say which server to measure and how to speak to it.
type targetFlags struct {
	url, endpoint, engine, model, apiKey, profile string
	apiKeyFile, caCert, usage                     string
	insecure                                      bool
	wait                                          waitReady
	cachePrompt, http2, netHTTP                   bool
	cachePromptSet                                bool // --cache-prompt given, on the line or in --config
	gpus                                          int
	gpuType                                       string
	headers                                       headers
	extraBody                                     extraBody
	format                                        responseFormat
	gpuMetrics                                    string
	proxy                                         string
	virtual                                       bool
	hw                                            hwFlags
}

func (f *targetFlags) register(fs *flagSet) {
	fs.group("Target")
	fs.StringVar(&f.url, "url", "", "server base URL, e.g. http://127.0.0.1:30000 (none: start the embedded simulator)")
	fs.StringVar(&f.endpoint, "endpoint", "", "generate (the engine's native raw endpoint), completions, chat, api-chat (Ollama), responses (OpenAI Responses API) or messages (Anthropic Messages API) (default: the raw generation endpoint)")
	fs.StringVar(&f.engine, "engine", "", "the server's engine when detection is wrong: "+strings.Join(engine.Names(), ", "))
	fs.StringVar(&f.model, "model", "", "model name (default: the first of /v1/models)")
	fs.Var(&f.wait, "wait-ready", "wait for a starting server: --wait-ready (up to 10m) or --wait-ready=TIMEOUT")
	fs.Lookup("wait-ready").NoOptDefVal = "10m"
	fs.StringVar(&f.profile, "sim-profile", "seed", "simulator profile when there is no --url (name or .yaml file)")
	fs.StringVar(&f.proxy, "proxy", "", "send every request through this HTTP proxy on purpose, e.g. http://proxy:3128 (its latency is measured as the server's; without it a proxy from HTTP_PROXY/HTTPS_PROXY is refused)")
	fs.group("Authentication and TLS")
	fs.StringVar(&f.apiKey, "api-key", "", "API key (shows in ps: prefer --api-key-file or $OPENAI_API_KEY; never written to any file)")
	fs.StringVar(&f.apiKeyFile, "api-key-file", "", "read the API key from this file (default: $OPENAI_API_KEY)")
	fs.StringVar(&f.caCert, "ca-cert", "", "trust the CA certificates in this PEM file for https:// (instead of the system's)")
	fs.BoolVar(&f.insecure, "insecure", false, "do not verify the https:// server's certificate (a self-signed test server)")
}

// registerTransport adds the flags of how requests travel and what is
// behind the server.
func (f *targetFlags) registerTransport(fs *flagSet) {
	fs.group("Requests")
	fs.Var(&f.headers, "header", "an HTTP header on every request, 'Name: value' (repeatable; values are never written to the result file)")
	fs.Var(&f.extraBody, "extra-body", "JSON object merged into every request body, e.g. '{\"top_p\":0.9}'; ENDPOINT=JSON for one endpoint only, e.g. chat='{\"chat_template_kwargs\":{\"enable_thinking\":false}}' (repeatable)")
	fs.Var(&f.format, "response-format", "structured output asked of every request: json (any JSON object) or json_schema:FILE (JSON following the schema in FILE); sent as response_format on chat and completions, text.format on responses, output_format on messages (a schema only)")
	fs.BoolVar(&f.cachePrompt, "cache-prompt", false, "let llama.cpp reuse its prompt cache (default: on for conversations only)")
	fs.BoolVar(&f.http2, "http2", false, "speak HTTP/2 (h2c to http:// URLs)")
	fs.StringVar(&f.usage, "usage", "continuous", "OpenAI routes: continuous (a token count on every chunk, exact tokens per chunk) or final (the final usage only: fewer bytes; tokens per chunk assumed one where unknown)")
	fs.BoolVar(&f.netHTTP, "net-http", false, "send HTTP/1.1 through Go's net/http instead of tokperf's own lean client (slower; to compare the two)")
	fs.group("Hardware (recorded for per-GPU figures and comparisons)")
	fs.IntVar(&f.gpus, "gpus", 0, "GPUs behind the server")
	fs.StringVar(&f.gpuType, "gpu-type", "", "GPU type behind the server, e.g. H200; cpu when it runs on the CPU (a comparison then knows it has none)")
	fs.StringVar(&f.gpuMetrics, "gpu-metrics", "", gpuMetricsHelp)
	f.hw.register(fs)
}

func (f *targetFlags) check() error {
	if f.virtual && f.url != "" {
		return usagef("--virtual runs the embedded simulator: give no --url")
	}
	if f.url != "" {
		u, err := url.Parse(f.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("--url %q is not an http(s) URL with a host", f.url)
		}
	}
	f.endpoint = endpointPath(f.endpoint)
	switch f.endpoint {
	case "", "generate", "completions", "chat", "api-chat", "responses", "messages":
	default:
		return usagef("--endpoint %q: want generate, completions, chat, api-chat, responses or messages", f.endpoint)
	}
	if _, ok := engine.Lookup(f.engine); f.engine != "" && !ok {
		return usagef("--engine %q: want %s", f.engine, engine.List())
	}
	if err := checkGPUMetrics(f.gpuMetrics); err != nil {
		return err
	}
	if _, err := f.hw.hardware(); err != nil {
		return err
	}
	if f.usage != "continuous" && f.usage != "final" && f.usage != "" {
		return usagef("--usage %q: want continuous or final", f.usage)
	}
	if f.proxy != "" {
		u, err := url.Parse(f.proxy)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("--proxy %q is not an http(s) URL with a host, e.g. http://proxy:3128", bench.Redact(f.proxy))
		}
		if f.http2 {
			return usagef("--proxy does not mix with --http2: requests through a proxy speak HTTP/1.1")
		}
	}
	if f.apiKey != "" && f.apiKeyFile != "" {
		return usagef("give --api-key or --api-key-file, not both")
	}
	if f.apiKeyFile != "" {
		b, err := infile.ReadAll(context.Background(), f.apiKeyFile, infile.Small)
		if err != nil {
			return usagef("--api-key-file: %v", err)
		}
		if f.apiKey = strings.TrimSpace(string(b)); f.apiKey == "" {
			return usagef("--api-key-file %s is empty", f.apiKeyFile)
		}
		if bad := badKey(f.apiKey); bad != "" {
			return usagef("--api-key-file %s: %s", f.apiKeyFile, bad)
		}
	}
	if bad := badKey(f.apiKey); bad != "" {
		return usagef("--api-key: %s", bad)
	}
	return nil
}

// badKey says what is wrong with an API key that cannot go in a header:
// several lines (a file of several keys, or of JSON), a control
// character or a byte that is not printable ASCII; "" for a good one.
// A line break would also end the header early in the lean client.
func badKey(key string) string {
	if n := strings.Count(key, "\n") + 1; n > 1 {
		return fmt.Sprintf("%d lines: want the key alone, on one line", n)
	}
	for _, c := range []byte(key) {
		if c < 0x21 || c > 0x7e {
			return fmt.Sprintf("a byte 0x%02x (a space, a control character or not ASCII): want the key alone", c)
		}
	}
	return ""
}

// warn says what the flags risk: a key on the command line is visible to
// every user of the machine (ps, /proc).
func (f *targetFlags) warn(e *env) {
	if f.apiKey != "" && f.apiKeyFile == "" {
		fmt.Fprintln(e.stderr, "warning: --api-key shows in ps and the shell history; use --api-key-file FILE or $OPENAI_API_KEY")
	}
	if f.proxy != "" {
		fmt.Fprintf(e.stderr, "warning: --proxy: every request goes through %s, and its latency is measured as the server's (TTFT, ITL and E2E include the proxy's hops)\n", bench.Redact(f.proxy))
	}
}

func (f *targetFlags) target() bench.Target {
	t := bench.Target{URL: f.url, SimProfile: f.profile, Endpoint: f.endpoint, Engine: f.engine, Model: f.model, APIKey: f.apiKey, CACert: f.caCert, Insecure: f.insecure,
		WaitReady: time.Duration(f.wait), CachePrompt: f.cachePrompt, CachePromptSet: f.cachePromptSet, HTTP2: f.http2, NetHTTP: f.netHTTP, GPUs: f.gpus, GPUType: f.gpuType, UsageFinal: f.usage == "final",
		Headers: f.headers, ExtraBody: f.extraBody, GPUMetrics: f.gpuMetrics, Proxy: f.proxy, Virtual: f.virtual, ResponseFormat: f.format.f, GPUHourUSD: f.hw.price}
	t.Hardware, _ = f.hw.hardware() // checked by check
	return t
}

// loadFlags are the flags of run, sweep and overhead.
type loadFlags struct {
	targetFlags
	traceFlags
	convFlags
	untilSLO
	untilSaturated                    bool
	maxConc                           int
	sloTTFT, sloTPOT, sloE2E          time.Duration
	sharedPrefix                      int
	out, arrival, format, debugAddr   string
	conc                              ints
	rates                             floats
	requests                          counts
	maxStage                          time.Duration
	config                            string
	inputTokens, outputTokens         lengths
	text, corpus, dataset, datasetFmt string
	tokenizer                         string
	quiet                             bool               // no live progress
	tok                               workload.Tokenizer // loaded from tokenizer by prompts
	warmup                            warmups
	duration, timeout                 time.Duration
	ignoreEOS                         bool
	maxErrorRate                      float64
	temperature                       float64
	seed                              int64
	concSet                           bool
	percentiles                       ints
	wide                              bool
	stab                              stabilityFlags
	shard                             shardFlags
	strict                            bool
	vllm                              vllmFlags
	force                             bool // -o may replace a file already there
	live                              string
	liveOut                           *bench.Output  // --live, read by check
	preset                            string         // --preset NAME[:ARG]
	presetSet                         *record.Preset // what the preset set, for the header
}

func (f *loadFlags) register(fs *flagSet, cmd string) {
	fs.group("Configuration")
	registerConfig(fs, &f.config)
	if cmd == "run" || cmd == "sweep" {
		registerPreset(fs, &f.preset)
	}
	f.targetFlags.register(fs)
	f.registerTransport(fs)
	f.registerLoad(fs, cmd)
	f.stab.repeat = 1 // overhead runs each level once
	if cmd != "overhead" {
		fs.group("Stability (time slices, repeats)")
		f.stab.register(fs, cmd)
	}
	f.registerWorkload(fs)
	if cmd == "run" {
		fs.group("Trace replay")
		f.traceFlags.register(fs)
	}
	if cmd != "overhead" {
		fs.group("Conversations and shared prefixes")
		f.convFlags.register(fs)
	}
	if cmd == "run" || cmd == "sweep" {
		f.shard.register(fs)
	}
	fs.group("SLOs (goodput counts the requests that meet every one given)")
	fs.DurationVar(&f.sloTTFT, "slo-ttft", 0, "TTFT at most this")
	fs.DurationVar(&f.sloTPOT, "slo-tpot", 0, "TPOT at most this")
	fs.DurationVar(&f.sloE2E, "slo-e2e", 0, "E2E latency at most this")
	fs.group("Output")
	outHelp := "result file (default ./tokperf-results/TIMESTAMP-" + cmd + ".jsonl)"
	if cmd == "run" || cmd == "sweep" {
		outHelp = "result file (default ./tokperf-results/TIMESTAMP-" + cmd + ".jsonl; -: stdout, for kubectl logs, and the report to stderr)"
	}
	fs.StringVarP(&f.out, "out", "o", "", outHelp)
	registerForce(fs, &f.force)
	registerFormat(fs, &f.format)
	registerPercentiles(fs, &f.percentiles, &f.wide)
	fs.BoolVar(&f.quiet, "quiet", false, quietHelp)
	fs.StringVar(&f.debugAddr, "debug-addr", "", "serve the Go profiler and goroutine/heap counts at this address during the run, e.g. 127.0.0.1:6060 (/debug/pprof/, /debug/vars)")
	if cmd != "overhead" {
		registerLive(fs, &f.live)
	}
	fs.Float64Var(&f.maxErrorRate, "max-error-rate", 0, "the share of failed requests a run may have and still exit 0 (exit 3 beyond it; 1 when every request failed)")
	if cmd != "overhead" {
		registerStrict(fs, &f.strict)
	}
	if cmd == "run" || cmd == "sweep" {
		f.vllm.register(fs) // hidden, and last: the help's groups count flags
	}
}

// registerStrict adds --strict: exit 5 when a verdict is withheld.
func registerStrict(fs *flagSet, strict *bool) {
	fs.BoolVar(strict, "strict", false, "exit 5 when a verdict is not judged (a stage it rests on was measured on a starved simulator, by a lagging client, or with too few requests)")
}

// registerLoad adds the flags of how much load, and when.
func (f *loadFlags) registerLoad(fs *flagSet, cmd string) {
	fs.group("Load")
	def := "1"
	switch cmd {
	case "sweep":
		def = "1,4,16,32"
	case "overhead":
		def = "1,8,32"
	}
	f.conc.Set(def)
	usage := "requests in flight, one stage per level (with --rate: a cap)"
	if cmd == "run" {
		usage = "requests in flight (one level; with --rate: a cap)"
	}
	fs.VarP(&f.conc, "concurrency", "c", usage)
	f.arrival = "poisson"
	if cmd != "overhead" {
		fs.Var(&f.rates, "rate", "open loop: requests per second, one stage per rate (comma-separated)")
		fs.StringVar(&f.arrival, "arrival", "poisson", "open-loop arrivals: poisson or constant")
	}
	if cmd == "sweep" {
		fs.BoolVar(&f.untilSaturated, "until-saturated", false, "keep doubling concurrency until aggregate grows less than 10% per doubling, then add a level between the last two")
		fs.IntVar(&f.maxConc, "max-concurrency", 1024, "the highest level --until-saturated or --until-slo tries")
		f.untilSLO.register(fs)
	}
	fs.Var(&f.requests, "requests", fmt.Sprintf("measured requests per stage, or one number per stage (default: max(%d, 4×C) in whole rounds of C, so p99 has %d samples; open loop: 60 s of the rate, at least %d; either way no request starts after --max-stage-time)", bench.MinRequests, bench.MinRequests, bench.MinRequests))
	fs.DurationVar(&f.maxStage, "max-stage-time", bench.DefaultMaxStageTime, "a stage of the default size starts no request after this (0: no limit; the table marks percentiles with too few samples)")
	fs.DurationVar(&f.duration, "duration", 0, "start requests for this long per stage instead of --requests")
	f.warmup = -1
	fs.Var(&f.warmup, "warmup", "warm-up requests per stage, excluded from figures: N, or KxC, K rounds at the stage's concurrency (-1: one round)")
	fs.DurationVar(&f.timeout, "timeout", bench.DefaultTimeout, "per-request timeout")
	if cmd == "run" || cmd == "sweep" {
		fs.BoolVar(&f.virtual, "virtual", false, "run the embedded simulator's engine in virtual time: no network, no client, no clock, so the figures are the profile's own whatever this machine's load, in seconds (closed-loop levels only)")
	}
}

// registerWorkload adds the flags of what each request asks for.
func (f *loadFlags) registerWorkload(fs *flagSet) {
	fs.group("Workload")
	f.inputTokens.Set(strconv.Itoa(bench.DefaultInputTokens))
	f.outputTokens.Set(strconv.Itoa(bench.DefaultOutputTokens))
	fs.Var(&f.inputTokens, "input-tokens", "prompt length in tokens: N, or a distribution: N:lognormal:SIGMA (median N), N:normal:SD, MIN-MAX (uniform), @FILE (one length a line)")
	fs.Var(&f.outputTokens, "output-tokens", "output tokens asked per request: N or a distribution, as --input-tokens")
	fs.StringVar(&f.text, "text", "words", "synthetic prompts: words (the fixed word list, one word a token on the simulator) or prose (sentences with a realistic word frequency and punctuation)")
	fs.StringVar(&f.corpus, "corpus", "", "draw prompts from random windows of this text file (a book, your logs)")
	fs.StringVar(&f.dataset, "dataset", "", "send the prompts of this dataset: ShareGPT JSON, JSON Lines of {prompt} or of OpenAI chat {messages}")
	fs.StringVar(&f.datasetFmt, "dataset-format", "", "sharegpt, prompts or chat (default: detected from the file)")
	fs.StringVar(&f.tokenizer, "tokenizer", "", "count prompts exactly: o200k_base, cl100k_base, a Hugging Face tokenizer.json or a model directory holding one, or server (the server's own /tokenize: vLLM, llama.cpp); synthetic prompts are then prose of exactly --input-tokens")
	fs.IntVar(&f.sharedPrefix, "shared-prefix", 0, "tokens every prompt shares at its start (0: each prompt unique, so no prefix cache flatters TTFT)")
	fs.BoolVar(&f.ignoreEOS, "ignore-eos", true, "ask the server to generate every output token (--ignore-eos=false honours EOS)")
	fs.Float64Var(&f.temperature, "temperature", 0, "sampling temperature")
	fs.Int64Var(&f.seed, "seed", 0, "seed of the prompts and arrivals (0: one of the run's own, recorded in the result file, so a second run is not served from the prefix cache the first filled)")
}

// registerForce adds --force: a result file or experiment folder that -o
// names and that is there already is replaced only when asked.
func registerForce(fs *flagSet, force *bool) {
	fs.BoolVar(force, "force", false, "replace the result file (an experiment's folder) that -o names when it is there already")
}

func registerFormat(fs *flagSet, format *string) {
	fs.StringVar(format, "format", "text", "output: "+strings.Join(report.Formats(), ", ")+" (text's tables are Markdown; json has every figure; a page, html or png, never goes to a terminal: it is written next to the result file, or refused with nowhere to go)")
}

// registerPercentiles adds --percentiles, the text table's percentiles,
// and --wide, its every column.
func registerPercentiles(fs *flagSet, ps *ints, wide *bool) {
	fs.Var(ps, "percentiles", "the percentiles the text table shows, of 50, 90, 95, 99 and 100 (the maximum), e.g. 50,90,99 (default 50,99; json and csv have them all)")
	fs.BoolVar(wide, "wide", false, "the text table with every column (req/s, request tok/s, TPOT, tokens, wall); the default fits 100 columns")
}

// view sets the run's view settings: the text table's percentiles
// (checked when the flags were) and its width.
func (f *loadFlags) view(run *analyze.Run) {
	run.Percentiles, _ = percentiles(f.percentiles)
	run.Wide = f.wide
}

// percentiles checks --percentiles and returns them for the run model.
func percentiles(ps ints) ([]float64, error) {
	var out []float64
	for _, p := range ps {
		switch p {
		case 50, 90, 95, 99, 100:
			out = append(out, float64(p))
		default:
			return nil, usagef("--percentiles %d: want some of 50, 90, 95, 99, 100", p)
		}
	}
	return out, nil
}

func checkFormat(format string) error {
	if !report.Known(format) {
		hint := ""
		if near := closest(format, report.Formats()); near != "" {
			hint = ": did you mean " + near + "?"
		}
		return usagef("--format %q%s (want %s)", format, hint, strings.Join(report.Formats(), ", "))
	}
	return nil
}

func (f *loadFlags) check(fs *flagSet) error {
	if err := applyConfig(fs, f.config); err != nil {
		return err
	}
	f.concSet = fs.Changed("concurrency")
	f.cachePromptSet = fs.Changed("cache-prompt")
	for _, check := range []func() error{
		func() error { return f.vllm.apply(fs, f) }, func() error { return f.applyPreset(fs) }, f.targetFlags.check, func() error { return checkFormat(f.format) },
		func() error { return f.traceFlags.check(f) }, func() error { return f.convFlags.check(f) }, func() error { return f.untilSLO.check(f) }, f.checkSizes, f.checkLive,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	if f.sharedPrefix != 0 && (f.sharedPrefix < 0 || f.sharedPrefix >= f.inputTokens.n()) {
		return usagef("--shared-prefix must be below --input-tokens")
	}
	if _, err := schedule.Parse(f.arrival); err != nil {
		return usagef("--arrival: %v", err)
	}
	switch {
	case f.text != "words" && f.text != "prose":
		return usagef("--text %q: want words or prose", f.text)
	case f.dataset != "" && f.corpus != "":
		return usagef("give --dataset or --corpus, not both")
	case f.duration < 0:
		return usagef("--duration must not be negative")
	case f.duration > 0 && (f.duration < minDuration || f.duration > maxDuration):
		return usagef("--duration %v: want %v to %v (a stage shorter than a second measures nothing)", f.duration, minDuration, maxDuration)
	case f.timeout <= 0:
		return usagef("--timeout must be positive")
	case f.sloTTFT < 0 || f.sloTPOT < 0 || f.sloE2E < 0:
		return usagef("SLOs must not be negative")
	case math.IsNaN(f.temperature) || math.IsInf(f.temperature, 0) || f.temperature < 0:
		return usagef("--temperature %v: want a number from 0 (greedy) up, e.g. 0.7", f.temperature)
	case f.gpus < 0:
		return usagef("--gpus %d: want the number of GPUs behind the server, or 0 for unknown", f.gpus)
	case (f.untilSaturated || f.untilSLO.spec != "") && f.maxConc < 1:
		return usagef("--max-concurrency %d: want a level of 1 or more", f.maxConc)
	case f.seed < 0:
		return usagef("--seed must not be negative (0: one of the run's own)")
	case !(f.maxErrorRate >= 0 && f.maxErrorRate <= 1):
		return usagef("--max-error-rate %g: want a share from 0 to 1, e.g. 0.01", f.maxErrorRate)
	case len(f.rates) > 0 && f.concSet && len(f.conc) != 1:
		return usagef("with --rate, -c is one cap on requests in flight, not a list")
	case f.untilSaturated && len(f.rates) > 0:
		return usagef("--until-saturated doubles concurrency: it does not mix with --rate")
	}
	return f.stab.check(f)
}

// checkSizes checks how many requests a stage has, and the percentiles
// the table shows of them.
func (f *loadFlags) checkSizes() error {
	if _, err := percentiles(f.percentiles); err != nil {
		return err
	}
	if err := eachWithin("--requests", f.requests, 0, maxRequests); err != nil {
		return err
	}
	switch {
	case len(f.requests) > 1 && len(f.rates) == 0 && len(f.requests) != len(f.conc):
		return usagef("--requests has %d values for %d stages: give one, or one per stage", len(f.requests), len(f.conc))
	case len(f.requests) > 1 && len(f.rates) > 0 && len(f.requests) != len(f.rates):
		return usagef("--requests has %d values for %d rates: give one, or one per rate", len(f.requests), len(f.rates))
	case len(f.requests) > 1 && f.untilSaturated:
		return usagef("--until-saturated chooses its own levels: give one --requests value")
	case f.maxStage < 0:
		return usagef("--max-stage-time must not be negative")
	}
	for i, c := range f.conc {
		if c > maxLevel {
			return usagef("-c %d: more than the %d requests one tokperf keeps in flight (each holds a connection); shard the load: tokperf k8s", c, maxLevel)
		}
		// A closed-loop stage of n requests never has more than n in
		// flight: a higher level is never reached, and its warm-up round
		// (one request a slot) would be all the stage's time.
		if len(f.requests) == 0 || len(f.rates) > 0 || f.duration > 0 || f.untilSaturated {
			continue
		}
		n := f.requests[0]
		if len(f.requests) > 1 {
			n = f.requests[i]
		}
		if n > 0 && c > n {
			return usagef("-c %d: a stage of %d requests never has more than %d in flight, so the level is not reached: give -c %d or less, or --requests %d or more", c, n, n, n, c)
		}
	}
	return nil
}

// maxLevel is the highest concurrency one tokperf process runs.
const maxLevel = 1_000_000

// prompts is the workload of realistic text, a corpus or a dataset, or nil
// for the fixed word list (whose prompts are one word a token on the
// simulator, as the golden files and the seed reproduction expect).
func (f *loadFlags) prompts(ctx context.Context) (*workload.Workload, error) {
	_, fixedIn := f.inputTokens.l.Fixed()
	_, fixedOut := f.outputTokens.l.Fixed()
	if f.text == "words" && f.corpus == "" && f.dataset == "" && f.tokenizer == "" && f.loaded == nil && !f.convFlags.on() && fixedIn && fixedOut {
		return nil, nil
	}
	format, err := workload.ParseFormat(f.datasetFmt)
	if err != nil {
		return nil, usagef("--dataset-format: %v", err)
	}
	if f.tokenizer == "server" {
		return nil, nil // built once the server is known: serverPrompts
	}
	var tok workload.Tokenizer
	if f.tokenizer != "" {
		t, err := tokenizer.Load(f.tokenizer)
		if err != nil {
			return nil, fmt.Errorf("--tokenizer: %w", err)
		}
		tok, f.tok = t, t
	}
	return f.workloadWith(ctx, format, tok)
}

// workloadWith is the workload of the flags, counted by tok.
func (f *loadFlags) workloadWith(ctx context.Context, format workload.Format, tok workload.Tokenizer) (*workload.Workload, error) {
	return workload.NewContext(ctx, workload.Options{Corpus: f.corpus, Dataset: f.dataset, Format: format, Tokenizer: tok, Input: f.inputTokens.l, Output: f.outputTokens.l,
		SharedPrefix: f.sharedPrefix, Requests: f.requestsOne(), Seed: f.seed, Trace: f.loaded, BlockSize: f.blockSize,
		Turns: f.turns, Conversations: f.multiTurn, OwnAnswers: f.ownAnswers, Agent: f.convFlags.shape, AgentTrace: f.replay, PrefixGroups: f.prefixGroups, IgnoreEOS: f.ignoreEOS, Temperature: f.temperature})
}

// serverPrompts builds the workload once the server's tokenizer is known
// (--tokenizer server); nil otherwise.
func (f *loadFlags) serverPrompts(ctx context.Context) func(workload.Tokenizer) (*workload.Workload, error) {
	if f.tokenizer != "server" {
		return nil
	}
	return func(tok workload.Tokenizer) (*workload.Workload, error) {
		format, err := workload.ParseFormat(f.datasetFmt)
		if err != nil {
			return nil, usagef("--dataset-format: %v", err)
		}
		return f.workloadWith(ctx, format, tok)
	}
}

// runSeed is the run's own seed when none was given: prompts differ from
// any earlier run's, so a server's prefix cache cannot serve them.
func (f *loadFlags) runSeed() {
	if f.seed == 0 {
		f.seed = time.Now().UnixNano()&(1<<53-1) | 1
	}
}

func (f *loadFlags) workload() workload.Synthetic {
	return workload.Synthetic{InputTokens: f.inputTokens.n(), OutputTokens: f.outputTokens.n(), IgnoreEOS: f.ignoreEOS, Temperature: f.temperature, Seed: f.seed, SharedPrefix: f.sharedPrefix, PrefixGroups: f.prefixGroups}
}

// targetOf is the target of a run: the embedded simulator, if it is one,
// counts prompts with the run's tokenizer, as the served model would.
func (f *loadFlags) targetOf() bench.Target {
	t := f.target()
	t.KeepText = f.ownAnswers // the next turn's history
	if f.tok != nil {
		t.Tokenizer = f.tok
	}
	return t
}

func (f *loadFlags) load() bench.Load {
	return bench.Load{Concurrency: f.conc, CapSet: f.concSet, Rates: f.rates, Arrival: schedule.Arrival(f.arrival), Requests: f.requestsOne(), RequestsPer: f.requestsPer(), MaxStageTime: f.stageTime(),
		Duration: f.duration, Warmup: int(f.warmup), Timeout: f.timeout, Seed: f.seed, UntilSaturated: f.untilSaturated, MaxConcurrency: f.maxConc, UntilSLO: f.limits,
		Trace: f.loaded, Speedup: f.speedup, Think: f.think, Slice: f.stab.slice, Repeat: f.stab.repeat}
}

// requestsOne is --requests when it is one value for every stage, else 0.
func (f *loadFlags) requestsOne() int {
	if len(f.requests) == 1 {
		return f.requests[0]
	}
	return 0
}

// requestsPer is --requests when it is one value per stage.
func (f *loadFlags) requestsPer() []int {
	if len(f.requests) > 1 {
		return f.requests
	}
	return nil
}

func (f *loadFlags) stageTime() time.Duration {
	if f.maxStage == 0 {
		return -1 // no limit
	}
	return f.maxStage
}

func (f *loadFlags) slo() record.SLO {
	return record.SLO{TTFTMs: record.Ms(f.sloTTFT), TPOTMs: record.Ms(f.sloTPOT), E2EMs: record.Ms(f.sloE2E)}
}
