package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// peerFlag is a flag of another benchmark tool and what tokperf calls it.
// An alias is taken as tokperf's own flag (vLLM's bench serve names whose
// meaning is the same); the rest are named in the unknown-flag message.
type peerFlag struct {
	tool, name string
	ours       string // tokperf's flag, "" when there is none
	note       string // what differs, or how to say it in tokperf
	alias      bool
}

// peerFlags are the flags of vLLM's bench serve, GuideLLM and AIPerf that
// users type, read from their documentation and argument parsers.
var peerFlags = []peerFlag{
	{"vLLM", "base-url", "url", "", true},
	{"vLLM", "max-concurrency", "concurrency", "vLLM's is the concurrency itself; tokperf sweep takes it so, or as the cap of --until-saturated", false},
	{"vLLM", "num-prompts", "requests", "", true},
	{"vLLM", "request-rate", "rate", "inf (vLLM's default: all at once) is a closed loop: give -c instead", false},
	{"vLLM", "random-input-len", "input-tokens", "", true},
	{"vLLM", "random-output-len", "output-tokens", "", true},
	{"vLLM", "dataset-name", "", "random is tokperf's default synthetic prompts; sharegpt reads --dataset-path", false},
	{"vLLM", "dataset-path", "dataset", "", true},
	{"vLLM", "result-filename", "out", "", true},
	{"vLLM", "save-result", "", "tokperf always writes its result file (-o names it)", false},
	{"vLLM", "metric-percentiles", "percentiles", "", true},
	{"vLLM", "endpoint", "endpoint", "a path is taken too: /v1/completions, /v1/chat/completions, /generate", false},
	{"vLLM", "backend", "endpoint", "vllm or openai: completions; openai-chat: chat; sglang or tgi: generate", false},
	{"vLLM", "ignore-eos", "ignore-eos", "on by default in tokperf (--ignore-eos=false honours EOS)", false},
	{"GuideLLM", "target", "url", "", false},
	{"GuideLLM", "max-seconds", "duration", "", false},
	{"GuideLLM", "max-requests", "requests", "", false},
	{"GuideLLM", "data", "dataset", "a file; synthetic prompt_tokens=N,output_tokens=M is --input-tokens N --output-tokens M", false},
	{"GuideLLM", "rate-type", "", "concurrent is -c, constant and poisson are --rate with --arrival, sweep is tokperf sweep", false},
	{"GuideLLM", "output-path", "out", "", false},
	{"GuideLLM", "processor", "tokenizer", "", false},
	{"AIPerf", "request-count", "requests", "", false},
	{"AIPerf", "endpoint-type", "endpoint", "chat or completions", false},
	{"AIPerf", "synthetic-input-tokens-mean", "input-tokens", "a spread is N:normal:SD", false},
	{"AIPerf", "output-tokens-mean", "output-tokens", "a spread is N:normal:SD", false},
	{"AIPerf", "benchmark-duration", "duration", "", false},
	{"AIPerf", "warmup-request-count", "warmup", "", false},
	{"AIPerf", "artifact-dir", "out", "a file, not a folder", false},
	{"AIPerf", "streaming", "", "tokperf always streams", false},
}

// peerAlias maps vLLM's names that mean what tokperf's do onto tokperf's,
// for the flag sets that have the flag.
func peerAlias(fs *pflag.FlagSet, name string) pflag.NormalizedName {
	for _, p := range peerFlags {
		if p.alias && p.name == name && fs.Lookup(p.ours) != nil {
			return pflag.NormalizedName(p.ours)
		}
	}
	return pflag.NormalizedName(name)
}

// peerHint is what the unknown flag --name is in another tool and how to
// say it to tokperf; "" when no tool has it.
func peerHint(fs *flagSet, name string) string {
	for _, p := range peerFlags {
		if p.name != name || p.alias {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "--%s is %s's", name, p.tool)
		if p.ours != "" && fs.Lookup(p.ours) != nil {
			fmt.Fprintf(&b, "; tokperf %s says --%s", fs.Name(), p.ours)
		} else if p.ours != "" {
			fmt.Fprintf(&b, "; tokperf %s has no --%s", fs.Name(), p.ours)
		}
		if p.note != "" {
			b.WriteString(" (" + p.note + ")")
		}
		return b.String()
	}
	return ""
}

// vllmFlags are vLLM's bench serve flags that take translating, as hidden
// flags of run and sweep.
type vllmFlags struct {
	datasetName, requestRate, backend string
	saveResult                        bool
}

func (v *vllmFlags) register(fs *flagSet) {
	fs.StringVar(&v.datasetName, "dataset-name", "", "vLLM's: random, or sharegpt with --dataset-path")
	fs.StringVar(&v.requestRate, "request-rate", "", "vLLM's: a rate, or inf for a closed loop")
	fs.StringVar(&v.backend, "backend", "", "vLLM's: vllm, openai, openai-chat, sglang or tgi")
	fs.BoolVar(&v.saveResult, "save-result", false, "vLLM's: tokperf always writes its result file")
	for _, n := range []string{"dataset-name", "request-rate", "backend", "save-result"} {
		fs.MarkHidden(n)
	}
}

// apply turns vLLM's flags into tokperf's load flags.
func (v *vllmFlags) apply(fs *flagSet, f *loadFlags) error {
	switch v.datasetName {
	case "", "random":
	case "sharegpt":
		if f.dataset == "" {
			return usagef("--dataset-name sharegpt needs --dataset-path FILE (tokperf: --dataset FILE)")
		}
		f.datasetFmt = "sharegpt"
	default:
		return usagef("--dataset-name %q: tokperf takes random (its synthetic prompts) or sharegpt with --dataset-path; other files: --dataset FILE", v.datasetName)
	}
	switch r := strings.ToLower(v.requestRate); r {
	case "", "inf":
	default:
		if err := f.rates.Set(r); err != nil {
			return usagef("--request-rate %q: want requests per second, or inf", v.requestRate)
		}
	}
	switch v.backend {
	case "":
	case "vllm", "openai", "lmdeploy":
		f.endpoint = "completions"
	case "openai-chat":
		f.endpoint = "chat"
	case "sglang", "tgi":
		f.endpoint = "generate"
	default:
		return usagef("--backend %q: tokperf detects the server; its --endpoint is generate, completions or chat", v.backend)
	}
	// vLLM's --max-concurrency is the concurrency; tokperf's sweep keeps
	// it as the cap of --until-saturated.
	if fs.Changed("max-concurrency") && !f.untilSaturated && !fs.Changed("concurrency") {
		f.conc = ints{f.maxConc}
		f.concSet = true
	}
	return nil
}

// endpointPath is --endpoint given as a route, vLLM's way.
func endpointPath(e string) string {
	switch strings.TrimSuffix(e, "/") {
	case "/v1/completions":
		return "completions"
	case "/v1/chat/completions":
		return "chat"
	case "/generate":
		return "generate"
	case "/api/chat":
		return "api-chat"
	case "/v1/responses":
		return "responses"
	case "/v1/messages":
		return "messages"
	}
	return e
}
