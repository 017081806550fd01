package record

import "encoding/json"

// Setup is everything that defines a run, written as the result file's
// header so any figure can be traced back to what produced it. It never
// holds credentials.
type Setup struct {
	Command   string   `json:"command"`               // run or sweep
	URL       string   `json:"url"`                   // without credentials
	Simulated bool     `json:"simulated"`             // the embedded simulator was the target
	Profile   string   `json:"sim_profile,omitempty"` // its profile
	Endpoint  string   `json:"endpoint"`              // generate, completions or chat
	Route     string   `json:"route"`                 // the HTTP path used
	Client    string   `json:"client,omitempty"`      // the HTTP client and protocol, e.g. "http/1.1 (tokperf)"
	TLS       *TLS     `json:"tls,omitempty"`         // what an https:// target negotiated
	Usage     string   `json:"usage,omitempty"`       // "final": OpenAI routes asked for the final usage only
	Model     string   `json:"model"`
	Server    Server   `json:"server"`
	Workload  Workload `json:"workload"`
	Load      Load     `json:"load"`
	Sampling  Sampling `json:"sampling"`
	GPUs      int      `json:"gpus,omitempty"` // as the user stated or the simulator models
	GPU       string   `json:"gpu,omitempty"`  // GPU type
	SLO       SLO      `json:"slo,omitzero"`
	// Hardware is the model's stated size and precision, for the physical
	// bound on the figures (nil: not stated).
	Hardware *Hardware `json:"hardware,omitempty"`
	// GPUHourUSD is the price of one GPU for an hour, for the cost per
	// token (0: none given).
	GPUHourUSD float64 `json:"gpu_hour_usd,omitempty"`
	// GPUMetrics is where the GPU readings came from: a DCGM exporter's
	// URL (without credentials), or empty for a local nvidia-smi.
	GPUMetrics string `json:"gpu_metrics,omitempty"`
	// Headers are the names of the user's --header, in order; their
	// values are never written (they may be credentials).
	Headers []string `json:"headers,omitempty"`
	// Proxy is the HTTP proxy every request went through on purpose
	// (--proxy), without credentials: its latency is in every figure.
	Proxy string `json:"proxy,omitempty"`
	// ExtraBody is --extra-body as given: fields merged into each body.
	ExtraBody []ExtraBody `json:"extra_body,omitempty"`
	// ResponseFormat is the structured output every request asked for
	// (--response-format); nil for none.
	ResponseFormat *ResponseFormat `json:"response_format,omitempty"`
	// CachePrompt says llama.cpp was asked to reuse its prompt cache
	// (cache_prompt: true): "asked" by --cache-prompt, or "conversations"
	// by default, as conversations exist to measure the cache; empty: off,
	// or not llama.cpp.
	CachePrompt string `json:"cache_prompt,omitempty"`
	// Shard, when set, says this file is one shard of a run split
	// across processes (--shard I/N); Load is then the whole run's.
	Shard *Shard `json:"shard,omitempty"`
	// Virtual says the stages ran on the embedded simulator's engine in
	// virtual time (--virtual): no network, no client, no clock; the
	// figures are the profile's own, whatever the machine's load.
	Virtual bool `json:"virtual,omitempty"`
	// Preset, when set, is the published test shape (--preset) the run
	// took its settings from.
	Preset *Preset `json:"preset,omitempty"`
}

// Hardware is what the served model is stated to be (--model-params,
// --active-params, --precision, or a simulator profile's hardware).
type Hardware struct {
	ParamsB       float64 `json:"params_b,omitempty"`        // parameters, billions
	ActiveParamsB float64 `json:"active_params_b,omitempty"` // per token (MoE); 0: all of ParamsB
	Precision     string  `json:"precision,omitempty"`       // of the weights: bf16, fp8, int4 …
	// KVBytesPerToken is the KV cache one token of context holds, summed
	// over layers (0: unknown, and the bound leaves the KV reads out).
	KVBytesPerToken float64 `json:"kv_bytes_per_token,omitempty"`
	// BytesPerParam is the weights' mean bytes a parameter where a server
	// states their size (a GGUF's mix of quantizations), for a Precision
	// it does not name.
	BytesPerParam float64 `json:"bytes_per_param,omitempty"`
	// From says where the size came from when not from the user: a
	// simulator profile, or the server's own answer.
	From string `json:"from,omitempty"`
}

// ExtraBody is a JSON object merged into every request body, of one
// endpoint only when Endpoint is set.
type ExtraBody struct {
	Endpoint string          `json:"endpoint,omitempty"`
	JSON     json.RawMessage `json:"fields"`
}

// ResponseFormat is a structured output asked for: Type "json" (any JSON
// object) or "json_schema" (JSON that follows Schema, named Name).
type ResponseFormat struct {
	Type   string          `json:"type"`
	Name   string          `json:"name,omitempty"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

// TLS is the protocol an https:// target negotiated with the client's
// transport, as its requests use it.
type TLS struct {
	Version string `json:"version"`          // "TLS 1.3"
	ALPN    string `json:"alpn,omitempty"`   // "h2", "http/1.1"; empty when none was negotiated
	Proto   string `json:"proto"`            // the HTTP version spoken over it: "HTTP/2.0", "HTTP/1.1"
	Cipher  string `json:"cipher,omitempty"` // the cipher suite
}

// SLO is the latency a request must meet to count toward goodput; zero
// fields are not checked.
type SLO struct {
	TTFTMs float64 `json:"ttft_ms,omitempty"`
	TPOTMs float64 `json:"tpot_ms,omitempty"`
	E2EMs  float64 `json:"e2e_ms,omitempty"`
}

// Set reports whether any objective is given.
func (s SLO) Set() bool { return s.TTFTMs > 0 || s.TPOTMs > 0 || s.E2EMs > 0 }

// Met reports whether a finished request met every objective.
func (s SLO) Met(r *Record) bool {
	if !r.OK() || len(r.Chunks) == 0 {
		return false
	}
	if ttft, _ := r.TTFT(); s.TTFTMs > 0 && ms(ttft) > s.TTFTMs {
		return false
	}
	if e2e, _ := r.E2E(); s.E2EMs > 0 && ms(e2e) > s.E2EMs {
		return false
	}
	if tpot, ok := r.TPOT(); s.TPOTMs > 0 && ok && tpot > s.TPOTMs {
		return false
	}
	return true
}

// Server is what the server said about itself.
type Server struct {
	Engine  string         `json:"engine"`            // sglang, vllm, tgi, llamacpp, ollama, triton, openai
	Version string         `json:"version,omitempty"` // as reported
	Info    map[string]any `json:"info,omitempty"`    // the identity route's answer, trimmed
	// Evidence are the identity routes whose answers matched the engine;
	// Doubt says why detection did not take the engine they point to.
	Evidence []string `json:"evidence,omitempty"`
	Doubt    string   `json:"doubt,omitempty"`
	// Routes are the generation endpoints its OpenAPI document lists
	// (completions, chat, responses, messages), read when a run asks for
	// the Responses or Messages API; nil where none was read.
	Routes []string `json:"routes,omitempty"`
}

// Workload is what each request asks for.
type Workload struct {
	InputTokens  int   `json:"input_tokens"`
	OutputTokens int   `json:"output_tokens"`
	IgnoreEOS    bool  `json:"ignore_eos"`
	Seed         int64 `json:"seed"`
	SharedPrefix int   `json:"shared_prefix,omitempty"` // tokens all prompts share
	PrefixGroups int   `json:"prefix_groups,omitempty"` // different shared prefixes, request i the (i mod G)-th
	// Reuse says the prompts share prefixes on purpose beyond SharedPrefix
	// (a trace's blocks, prefix groups, conversations' histories): a
	// prefix cache's hits are what is studied, not a flattered TTFT.
	Reuse bool `json:"reuse,omitempty"`
	// Conversations says requests were conversations sent turn by turn
	// (Turns each when generated), ThinkS apart; OwnAnswers that the
	// history held the server's answers.
	Conversations bool    `json:"conversations,omitempty"`
	Turns         int     `json:"turns,omitempty"`
	ThinkS        float64 `json:"think_s,omitempty"`
	OwnAnswers    bool    `json:"own_answers,omitempty"`
	// Agent is the shape of generated agent sessions (--agent), as
	// workload.ParseAgent reads it; Conversations is then set too.
	Agent string `json:"agent,omitempty"`
	// CacheCeiling is an agent trace's prefix cache ceiling: the share
	// of its prompt tokens a prefix cache that forgets nothing could
	// serve, from its hash ids (every session once).
	CacheCeiling float64 `json:"prefix_cache_ceiling,omitempty"`
	// Prompts describes where prompts came from when not the fixed word
	// list: synthetic prose, a corpus or a dataset, the length
	// distributions, and whether a tokenizer counted them or they are
	// estimated.
	Prompts   string `json:"prompts,omitempty"`
	Tokenizer string `json:"tokenizer,omitempty"` // the tokenizer that counted prompts
	Input     string `json:"input,omitempty"`     // the input length distribution, when not fixed
	Output    string `json:"output,omitempty"`    // the output length distribution, when not fixed
	// DistinctPrompts counts a dataset's different prompts, and
	// PromptLengths and OutputLengths describe its lengths (quantiles of
	// tokens): what a verdict resting on the dataset had.
	DistinctPrompts int    `json:"distinct_prompts,omitempty"`
	PromptLengths   string `json:"prompt_lengths,omitempty"`
	OutputLengths   string `json:"output_lengths,omitempty"`
}

// Load is how many requests start and when.
type Load struct {
	Concurrency []int     `json:"concurrency,omitempty"`        // one stage per level
	Rate        float64   `json:"rate,omitempty"`               // requests/s, open loop
	Arrival     string    `json:"arrival,omitempty"`            // poisson or constant
	Rates       []float64 `json:"rates,omitempty"`              // every stage's rate, open loop
	Requests    int       `json:"requests,omitempty"`           // per stage; 0: max(100, 4×C) or MaxStageS
	RequestsPer []int     `json:"requests_per_stage,omitempty"` // each stage's, when they differ
	DurationS   float64   `json:"duration_s,omitempty"`         // per stage, instead of Requests
	MaxStageS   float64   `json:"max_stage_s,omitempty"`        // a default stage starts no request after this
	Warmup      int       `json:"warmup"`                       // warm-up requests per stage; -1: one round
	TimeoutS    float64   `json:"timeout_s"`                    // per request
	// TimerLateP99Ms is how late this machine's timers woke (p99 of a
	// probe at the start of an open-loop run): sends are late only past it.
	TimerLateP99Ms float64 `json:"timer_late_p99_ms,omitempty"`
	// Trace is the trace file replayed (Arrival "trace"), at Speedup
	// times its pace.
	Trace   string  `json:"trace,omitempty"`
	Speedup float64 `json:"speedup,omitempty"`
	// SliceS is the length of the time slices the run's stages were cut
	// into (--slice, soak); 0: none.
	SliceS float64 `json:"slice_s,omitempty"`
	// Repeat is how many times each stage ran (--repeat); 0 or 1: once.
	Repeat int `json:"repeat,omitempty"`
	// UntilSLO are a capacity search's limits on the p99 of agent
	// sessions' per-turn TTFT and TPOT (--until-slo): its levels are
	// judged against them (METRICS.md §3, Capacity under an SLO).
	UntilSLO SLO `json:"until_slo,omitzero"`
}

// Sampling is the sampling parameters sent.
type Sampling struct {
	Temperature float64 `json:"temperature"`
}

// Machine describes where the client ran.
type Machine struct {
	Hostname  string `json:"hostname"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUs      int    `json:"cpus"`
	GoVersion string `json:"go_version"`
}
