package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/engine"
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

// floats is a comma-separated list of positive numbers.
type floats []float64

func (v *floats) String() string {
	var s []string
	for _, n := range *v {
		s = append(s, strconv.FormatFloat(n, 'g', -1, 64))
	}
	return strings.Join(s, ",")
}

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

func (w *waitReady) String() string { return time.Duration(*w).String() }

func (w *waitReady) IsBoolFlag() bool { return true }

func (w *waitReady) Set(s string) error {
	switch s {
	case "true":
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

// lengths is a token length or a distribution of them (workload.ParseLengths).
type lengths struct {
	spec string
	l    workload.Lengths
}

func (v *lengths) String() string { return v.spec }

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
	gpus                                          int
	gpuType                                       string
}

func (f *targetFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "url", "", "server base URL, e.g. http://127.0.0.1:30000 (none: start the embedded simulator)")
	fs.StringVar(&f.endpoint, "endpoint", "", "generate (the engine's native raw endpoint), completions, chat, or api-chat (Ollama) (default: the raw generation endpoint)")
	fs.StringVar(&f.engine, "engine", "", "the server's engine when detection is wrong: "+strings.Join(engine.Names(), ", "))
	fs.Var(&f.wait, "wait-ready", "wait for a starting server: --wait-ready (up to 10m) or --wait-ready=TIMEOUT")
	fs.StringVar(&f.model, "model", "", "model name (default: the first of /v1/models)")
	fs.StringVar(&f.apiKey, "api-key", "", "API key (shows in ps: prefer --api-key-file or $OPENAI_API_KEY; never written to any file)")
	fs.StringVar(&f.apiKeyFile, "api-key-file", "", "read the API key from this file (default: $OPENAI_API_KEY)")
	fs.StringVar(&f.caCert, "ca-cert", "", "trust the CA certificates in this PEM file for https:// (instead of the system's)")
	fs.BoolVar(&f.insecure, "insecure", false, "do not verify the https:// server's certificate (a self-signed test server)")
	fs.StringVar(&f.profile, "sim-profile", "seed", "simulator profile when there is no --url (name or .yaml file)")
}

// registerTransport adds the flags of how requests travel and what is
// behind the server.
func (f *targetFlags) registerTransport(fs *flag.FlagSet) {
	fs.BoolVar(&f.cachePrompt, "cache-prompt", false, "let llama.cpp reuse its prompt cache")
	fs.BoolVar(&f.http2, "http2", false, "speak HTTP/2 (h2c to http:// URLs)")
	fs.StringVar(&f.usage, "usage", "continuous", "OpenAI routes: continuous (a token count on every chunk, exact tokens per chunk) or final (the final usage only: fewer bytes; tokens per chunk assumed one where unknown)")
	fs.BoolVar(&f.netHTTP, "net-http", false, "send HTTP/1.1 through Go's net/http instead of tokperf's own lean client (slower; to compare the two)")
	fs.IntVar(&f.gpus, "gpus", 0, "GPUs behind the server, recorded for per-GPU figures")
	fs.StringVar(&f.gpuType, "gpu-type", "", "GPU type behind the server, recorded for comparisons")
}

func (f *targetFlags) check() error {
	if f.url != "" {
		u, err := url.Parse(f.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("--url %q is not an http(s) URL with a host", f.url)
		}
	}
	switch f.endpoint {
	case "", "generate", "completions", "chat", "api-chat":
	default:
		return usagef("--endpoint %q: want generate, completions, chat or api-chat", f.endpoint)
	}
	if _, ok := engine.Lookup(f.engine); f.engine != "" && !ok {
		return usagef("--engine %q: want %s", f.engine, engine.List())
	}
	if f.usage != "continuous" && f.usage != "final" && f.usage != "" {
		return usagef("--usage %q: want continuous or final", f.usage)
	}
	if f.apiKey != "" && f.apiKeyFile != "" {
		return usagef("give --api-key or --api-key-file, not both")
	}
	if f.apiKeyFile != "" {
		b, err := os.ReadFile(f.apiKeyFile)
		if err != nil {
			return usagef("--api-key-file: %v", err)
		}
		if f.apiKey = strings.TrimSpace(string(b)); f.apiKey == "" {
			return usagef("--api-key-file %s is empty", f.apiKeyFile)
		}
	}
	return nil
}

// warn says what the flags risk: a key on the command line is visible to
// every user of the machine (ps, /proc).
func (f *targetFlags) warn(e *env) {
	if f.apiKey != "" && f.apiKeyFile == "" {
		fmt.Fprintln(e.stderr, "warning: --api-key shows in ps and the shell history; use --api-key-file FILE or $OPENAI_API_KEY")
	}
}

func (f *targetFlags) target() bench.Target {
	return bench.Target{URL: f.url, SimProfile: f.profile, Endpoint: f.endpoint, Engine: f.engine, Model: f.model, APIKey: f.apiKey, CACert: f.caCert, Insecure: f.insecure,
		WaitReady: time.Duration(f.wait), CachePrompt: f.cachePrompt, HTTP2: f.http2, NetHTTP: f.netHTTP, GPUs: f.gpus, GPUType: f.gpuType, UsageFinal: f.usage == "final"}
}

// loadFlags are the flags of run, sweep and overhead.
type loadFlags struct {
	targetFlags
	untilSaturated                    bool
	maxConc                           int
	sloTTFT, sloTPOT, sloE2E          time.Duration
	sharedPrefix                      int
	out, arrival, format, debugAddr   string
	conc                              ints
	rates                             floats
	requests                          int
	inputTokens, outputTokens         lengths
	text, corpus, dataset, datasetFmt string
	tokenizer                         string
	tok                               workload.Tokenizer // loaded from tokenizer by prompts
	warmup                            int
	duration, timeout                 time.Duration
	ignoreEOS                         bool
	maxErrorRate                      float64
	temperature                       float64
	seed                              int64
	concSet                           bool
	stab                              stabilityFlags
}

func (f *loadFlags) register(fs *flag.FlagSet, cmd string) {
	f.targetFlags.register(fs)
	fs.IntVar(&f.sharedPrefix, "shared-prefix", 0, "tokens every prompt shares at its start (0: each prompt unique, so no prefix cache flatters TTFT)")
	f.registerTransport(fs)
	if cmd == "sweep" {
		fs.BoolVar(&f.untilSaturated, "until-saturated", false, "keep doubling concurrency until aggregate grows less than 10% per doubling, then add a level between the last two")
		fs.IntVar(&f.maxConc, "max-concurrency", 1024, "the highest level --until-saturated tries")
	}
	fs.DurationVar(&f.sloTTFT, "slo-ttft", 0, "goodput counts requests whose TTFT is at most this")
	fs.DurationVar(&f.sloTPOT, "slo-tpot", 0, "goodput counts requests whose TPOT is at most this")
	fs.DurationVar(&f.sloE2E, "slo-e2e", 0, "goodput counts requests whose E2E latency is at most this")
	fs.StringVar(&f.out, "out", "", "result file (default ./tokperf-results/TIMESTAMP-"+cmd+".jsonl)")
	fs.StringVar(&f.out, "o", "", "shorthand for --out")
	registerFormat(fs, &f.format)
	fs.StringVar(&f.arrival, "arrival", "poisson", "open-loop arrivals: poisson or constant")
	def := "1"
	if cmd == "sweep" {
		def = "1,4,16,32"
	}
	f.conc.Set(def)
	fs.Var(&f.conc, "concurrency", "requests in flight, one stage per level (with --rate: a cap)")
	fs.Var(&f.conc, "c", "shorthand for --concurrency")
	fs.Var(&f.rates, "rate", "open loop: requests per second, one stage per rate (comma-separated)")
	fs.IntVar(&f.requests, "requests", 0, "measured requests per stage (default max(4, 2×C); open loop 60×rate)")
	fs.DurationVar(&f.duration, "duration", 0, "start requests for this long per stage instead of --requests")
	f.inputTokens.Set(strconv.Itoa(bench.DefaultInputTokens))
	f.outputTokens.Set(strconv.Itoa(bench.DefaultOutputTokens))
	fs.Var(&f.inputTokens, "input-tokens", "prompt length in tokens: N, or a distribution: N:lognormal:SIGMA (median N), N:normal:SD, MIN-MAX (uniform), @FILE (one length a line)")
	fs.Var(&f.outputTokens, "output-tokens", "output tokens asked per request: N or a distribution, as --input-tokens")
	fs.StringVar(&f.text, "text", "words", "synthetic prompts: words (the fixed word list, one word a token on the simulator) or prose (sentences with a realistic word frequency and punctuation)")
	fs.StringVar(&f.corpus, "corpus", "", "draw prompts from random windows of this text file (a book, your logs)")
	fs.StringVar(&f.dataset, "dataset", "", "send the prompts of this dataset: ShareGPT JSON, JSON Lines of {prompt} or of OpenAI chat {messages}")
	fs.StringVar(&f.datasetFmt, "dataset-format", "", "sharegpt, prompts or chat (default: detected from the file)")
	fs.StringVar(&f.tokenizer, "tokenizer", "", "count prompts exactly: o200k_base, cl100k_base, a Hugging Face tokenizer.json or a model directory holding one, or server (the server's own /tokenize: vLLM, llama.cpp); synthetic prompts are then prose of exactly --input-tokens")
	fs.BoolVar(&f.ignoreEOS, "ignore-eos", true, "ask the server to generate every output token (--ignore-eos=false honours EOS)")
	fs.Float64Var(&f.temperature, "temperature", 0, "sampling temperature")
	fs.IntVar(&f.warmup, "warmup", -1, "warm-up requests per stage, excluded from figures (-1: one round at the stage's concurrency)")
	fs.DurationVar(&f.timeout, "timeout", bench.DefaultTimeout, "per-request timeout")
	f.stab.register(fs, cmd)
	fs.Int64Var(&f.seed, "seed", 0, "seed of the prompts and arrivals (0: one of the run's own, recorded in the result file, so a second run is not served from the prefix cache the first filled)")
	fs.StringVar(&f.debugAddr, "debug-addr", "", "serve the Go profiler and goroutine/heap counts at this address during the run, e.g. 127.0.0.1:6060 (/debug/pprof/, /debug/vars)")
	fs.Float64Var(&f.maxErrorRate, "max-error-rate", 0, "the share of failed requests a run may have and still exit 0 (exit 3 beyond it; 1 when every request failed)")
}

func registerFormat(fs *flag.FlagSet, format *string) {
	fs.StringVar(format, "format", "text", "output: "+strings.Join(report.Formats(), ", ")+" (text's tables are Markdown; json has every figure)")
}

func checkFormat(format string) error {
	if !report.Known(format) {
		return usagef("--format %q: want %s", format, strings.Join(report.Formats(), ", "))
	}
	return nil
}

func parse(fs *flag.FlagSet, args []string, e *env) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(e.stdout)
			fmt.Fprintf(e.stdout, "Usage: tokperf %s [flags]\n\nFlags:\n", fs.Name())
			fs.PrintDefaults()
			return errHelp
		}
		return flagError(fs, err)
	}
	if fs.NArg() > 0 {
		if prev := len(args) - fs.NArg() - 1; prev >= 0 && strings.TrimLeft(args[prev], "-") == "wait-ready" {
			return usagef("unexpected argument %q: give the timeout with =, as --wait-ready=%s", fs.Arg(0), fs.Arg(0))
		}
		return usagef("unexpected argument %q (flags start with -)", fs.Arg(0))
	}
	return nil
}

// flagError says what a bad flag must look like, or which flag was meant.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if near := closest(strings.TrimLeft(name, "-"), names); near != "" {
			return usagef("unknown flag --%s: did you mean --%s?", strings.TrimLeft(name, "-"), near)
		}
		return usagef("unknown flag --%s (tokperf help %s lists them)", strings.TrimLeft(name, "-"), fs.Name())
	}
	// "invalid value "5" for flag -timeout: parse error"
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if i := strings.Index(rest, " for flag -"); i >= 0 {
			value, name := rest[:i], rest[i+len(" for flag -"):]
			name, why, _ := strings.Cut(name, ": ")
			// A duration flag's default prints as one ("10m0s", "0s").
			if f := fs.Lookup(name); f != nil && strings.HasSuffix(f.DefValue, "s") {
				if _, err := time.ParseDuration(f.DefValue); err == nil {
					why = "want a duration such as 30s, 5m or 1h30m"
				}
			}
			return usagef("--%s %s: %s", name, value, why)
		}
	}
	return usagef("%v", err)
}

// closest is the name within two edits of s, or "".
func closest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := edits(s, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// edits is the Levenshtein distance of a and b.
func edits(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// parseMixed parses flags that may come after positional arguments
// ("compare run.jsonl --baseline x") and returns the positionals.
func parseMixed(fs *flag.FlagSet, args []string, e *env) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprintf(e.stdout, "Usage: tokperf %s [flags] ARGS...\n\nFlags:\n", fs.Name())
				fs.SetOutput(e.stdout)
				fs.PrintDefaults()
				return nil, errHelp
			}
			return nil, flagError(fs, err)
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func (f *loadFlags) check(fs *flag.FlagSet) error {
	fs.Visit(func(fl *flag.Flag) {
		if fl.Name == "c" || fl.Name == "concurrency" {
			f.concSet = true
		}
	})
	if err := f.targetFlags.check(); err != nil {
		return err
	}
	if err := checkFormat(f.format); err != nil {
		return err
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
	case f.requests < 0:
		return usagef("--requests must not be negative")
	case f.duration < 0:
		return usagef("--duration must not be negative")
	case f.timeout <= 0:
		return usagef("--timeout must be positive")
	case f.sloTTFT < 0 || f.sloTPOT < 0 || f.sloE2E < 0:
		return usagef("SLOs must not be negative")
	case math.IsNaN(f.temperature) || math.IsInf(f.temperature, 0) || f.temperature < 0:
		return usagef("--temperature %v: want a number from 0 (greedy) up, e.g. 0.7", f.temperature)
	case f.gpus < 0:
		return usagef("--gpus %d: want the number of GPUs behind the server, or 0 for unknown", f.gpus)
	case f.untilSaturated && f.maxConc < 1:
		return usagef("--max-concurrency %d: want a level of 1 or more", f.maxConc)
	case f.seed < 0:
		return usagef("--seed must not be negative (0: one of the run's own)")
	case !(f.maxErrorRate >= 0 && f.maxErrorRate <= 1):
		return usagef("--max-error-rate %g: want a share from 0 to 1, e.g. 0.01", f.maxErrorRate)
	case f.warmup < -1:
		return usagef("--warmup must be -1 (one round), 0 or more")
	case len(f.rates) > 0 && f.concSet && len(f.conc) != 1:
		return usagef("with --rate, -c is one cap on requests in flight, not a list")
	case f.untilSaturated && len(f.rates) > 0:
		return usagef("--until-saturated doubles concurrency: it does not mix with --rate")
	}
	return f.stab.check(f)
}

// prompts is the workload of realistic text, a corpus or a dataset, or nil
// for the fixed word list (whose prompts are one word a token on the
// simulator, as the golden files and the seed reproduction expect).
func (f *loadFlags) prompts() (*workload.Workload, error) {
	_, fixedIn := f.inputTokens.l.Fixed()
	_, fixedOut := f.outputTokens.l.Fixed()
	if f.text == "words" && f.corpus == "" && f.dataset == "" && f.tokenizer == "" && fixedIn && fixedOut {
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
	return f.workloadWith(format, tok)
}

// workloadWith is the workload of the flags, counted by tok.
func (f *loadFlags) workloadWith(format workload.Format, tok workload.Tokenizer) (*workload.Workload, error) {
	return workload.New(workload.Options{Corpus: f.corpus, Dataset: f.dataset, Format: format, Tokenizer: tok, Input: f.inputTokens.l, Output: f.outputTokens.l,
		SharedPrefix: f.sharedPrefix, Requests: f.requests, Seed: f.seed, IgnoreEOS: f.ignoreEOS, Temperature: f.temperature})
}

// serverPrompts builds the workload once the server's tokenizer is known
// (--tokenizer server); nil otherwise.
func (f *loadFlags) serverPrompts() func(workload.Tokenizer) (*workload.Workload, error) {
	if f.tokenizer != "server" {
		return nil
	}
	return func(tok workload.Tokenizer) (*workload.Workload, error) {
		format, err := workload.ParseFormat(f.datasetFmt)
		if err != nil {
			return nil, usagef("--dataset-format: %v", err)
		}
		return f.workloadWith(format, tok)
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
	return workload.Synthetic{InputTokens: f.inputTokens.n(), OutputTokens: f.outputTokens.n(), IgnoreEOS: f.ignoreEOS, Temperature: f.temperature, Seed: f.seed, SharedPrefix: f.sharedPrefix}
}

// targetOf is the target of a run: the embedded simulator, if it is one,
// counts prompts with the run's tokenizer, as the served model would.
func (f *loadFlags) targetOf() bench.Target {
	t := f.target()
	if f.tok != nil {
		t.Tokenizer = f.tok
	}
	return t
}

func (f *loadFlags) load() bench.Load {
	return bench.Load{Concurrency: f.conc, CapSet: f.concSet, Rates: f.rates, Arrival: schedule.Arrival(f.arrival), Requests: f.requests,
		Duration: f.duration, Warmup: f.warmup, Timeout: f.timeout, Seed: f.seed, UntilSaturated: f.untilSaturated, MaxConcurrency: f.maxConc,
		Slice: f.stab.slice, Repeat: f.stab.repeat}
}

func (f *loadFlags) slo() record.SLO {
	return record.SLO{TTFTMs: record.Ms(f.sloTTFT), TPOTMs: record.Ms(f.sloTPOT), E2EMs: record.Ms(f.sloE2E)}
}
