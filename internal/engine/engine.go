// Package engine is the table of the inference servers tokperf knows: how
// to recognise each (identity routes and the shape of their answers),
// whether tokperf speaks its native raw endpoint, where tokens per chunk
// come from, and its Prometheus metric names. Detection, the --engine
// flag, its help text and the telemetry names all come from it.
//
//	e, ok := engine.Lookup("sglang")
//	fmt.Println(e.Native, e.Metrics.Running) // true sglang:num_running_reqs
package engine

import "strings"

// Engine is everything tokperf knows of one kind of inference server: how
// to recognise it, which raw endpoint it has, where tokens per chunk come
// from, and its Prometheus metric names. Adding an engine is one entry
// here, one protocol file in internal/backend where it has a native
// protocol, and one file of the simulator's imitation of it in
// internal/sim (docs/ARCHITECTURE.md, "How to add an engine", names the
// tests that say which is missing).
type Engine struct {
	Name string // as --engine takes it and the result header records it
	// Probes are its identity routes; detection asks every engine's at
	// once and the first entry of the table whose answer matches wins.
	Probes []Probe
	// Native says tokperf speaks its own raw generation protocol (the
	// "generate" endpoint; the protocol is in internal/backend, registered
	// under Name); false when tokperf speaks only the OpenAI routes to it.
	Native bool
	// ChunkTokens says where the tokens of each chunk come from, for help.
	ChunkTokens string
	// Tokenize is how the server tokenizes text for a client, where it
	// does (--tokenizer server); the zero value where it does not.
	Tokenize TokenizeRoutes
	// Metrics are its /metrics names (empty: none that tokperf reads).
	Metrics Metrics
	// NoIgnoreEOS says the server has no ignore_eos (TGI, Ollama): tokperf
	// cannot ask it to run every output to the limit, so outputs that end
	// at EOS are its normal stop, not a request it disobeyed.
	NoIgnoreEOS bool
	// PromptCache says the server reuses a prompt's cached prefix unless
	// each request's cache_prompt says not to (llama.cpp, on every route):
	// tokperf sends it on every route, off unless conversations or
	// --cache-prompt want it.
	PromptCache bool
	// TemplatedCompletions says its OpenAI /v1/completions applies the
	// model's chat template to the prompt (Ollama): not a raw completion.
	TemplatedCompletions bool
	// Loaded is the route listing the models in memory (Ollama's /api/ps,
	// {"models":[{"model": …}]}) where /v1/models lists every model on
	// disk: a run measures a loaded one, not one it would load.
	Loaded string
}

// TokenizeRoutes are a server's tokenize and detokenize routes and the
// JSON field that holds the text in them.
type TokenizeRoutes struct {
	Tokenize, Detokenize string
	TextField            string // "prompt" (vLLM) or "content" (llama.cpp)
}

// Probe is one identity route and what its JSON answer must hold.
type Probe struct {
	Path       string
	VersionKey string // the field holding the version
	Is         func(map[string]any) bool
}

func has(keys ...string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		for _, k := range keys {
			if m[k] == nil {
				return false
			}
		}
		return true
	}
}

func anyOf(keys ...string) func(map[string]any) bool {
	return func(m map[string]any) bool {
		for _, k := range keys {
			if m[k] != nil {
				return true
			}
		}
		return false
	}
}

// onlyVersion matches an answer that is {"version": …} and nothing else.
func onlyVersion(m map[string]any) bool { return len(m) == 1 && m["version"] != nil }

// isTriton matches Triton's server metadata (GET /v2, KServe v2
// protocol): its name is "triton" and it lists its extensions.
func isTriton(m map[string]any) bool { return m["name"] == "triton" && m["extensions"] != nil }

// table is the table, in detection order.
var table = []Engine{
	{
		Name: "sglang",
		Probes: []Probe{
			{"/server_info", "version", anyOf("model_path", "tp_size")},
			{"/get_server_info", "version", anyOf("model_path", "tp_size")},
			{"/get_model_info", "version", has("model_path", "is_generation")},
			{"/model_info", "version", has("model_path", "is_generation")}, // newer SGLang's name for it
		},
		Native:      true,
		ChunkTokens: "cumulative meta_info.completion_tokens",
		Metrics: Metrics{Running: "sglang:num_running_reqs", Waiting: "sglang:num_queue_reqs", KV: "sglang:token_usage",
			Generated: "sglang:generation_tokens_total", Prompt: "sglang:prompt_tokens_total",
			SpecLength: "sglang:spec_accept_length", CacheHitRate: "sglang:cache_hit_rate"},
	},
	{
		Name:        "tgi",
		Probes:      []Probe{{"/info", "version", has("model_id", "router")}},
		Native:      true,
		ChunkTokens: "one event per token; details.generated_tokens",
		Metrics:     Metrics{Running: "tgi_batch_current_size", Waiting: "tgi_queue_size", Generated: "tgi_request_generated_tokens_total"},
		NoIgnoreEOS: true,
	},
	{
		Name:        "llamacpp",
		Probes:      []Probe{{"/props", "build_info", anyOf("default_generation_settings", "total_slots")}},
		Native:      true,
		ChunkTokens: "tokens per event; timings.predicted_n",
		Tokenize:    TokenizeRoutes{"/tokenize", "/detokenize", "content"},
		PromptCache: true,
		Metrics: Metrics{Running: "llamacpp:requests_processing", Waiting: "llamacpp:requests_deferred",
			Generated: "llamacpp:tokens_predicted_total", Prompt: "llamacpp:prompt_tokens_total", CountersAtEnd: true},
	},
	{
		Name:        "ollama",
		Probes:      []Probe{{"/api/version", "version", onlyVersion}},
		Native:      true,
		ChunkTokens: "one line per token; eval_count",
		NoIgnoreEOS: true,
		// /v1/completions goes through the chat template (a 2-word prompt
		// counted 29 prompt tokens on v0.17.4).
		TemplatedCompletions: true,
		Loaded:               "/api/ps",
	},
	{
		Name:        "vllm",
		Probes:      []Probe{{"/version", "version", onlyVersion}},
		ChunkTokens: "continuous_usage_stats; final usage",
		Tokenize:    TokenizeRoutes{"/tokenize", "/detokenize", "prompt"},
		Metrics: Metrics{Running: "vllm:num_requests_running", Waiting: "vllm:num_requests_waiting", KV: "vllm:kv_cache_usage_perc",
			Preemptions: "vllm:num_preemptions_total", Generated: "vllm:generation_tokens_total", Prompt: "vllm:prompt_tokens_total",
			SpecDrafts: "vllm:spec_decode_num_drafts_total", SpecDraftTokens: "vllm:spec_decode_num_draft_tokens_total",
			SpecAccepted: "vllm:spec_decode_num_accepted_tokens_total",
			CacheHits:    "vllm:prefix_cache_hits_total", CacheQueries: "vllm:prefix_cache_queries_total"},
	},
	{
		// Triton Inference Server's generate extension, as TensorRT-LLM's
		// ensemble serves it: the model is in the route, and /v2 says
		// {"name":"triton","version":…,"extensions":[…,"generate",…]}.
		Name:        "triton",
		Probes:      []Probe{{"/v2", "version", isTriton}},
		Native:      true,
		ChunkTokens: "no count: one token per event assumed (text_output)",
		// TensorRT-LLM's ensemble has no ignore_eos among its inputs.
		NoIgnoreEOS: true,
	},
	{
		// Any other OpenAI-compatible server (TensorRT-LLM's trtllm-serve
		// and the rest):
		// what detection says when no identity route answers.
		Name:        "openai",
		ChunkTokens: "continuous_usage_stats; final usage",
	},
}

// Table is every engine, in detection order.
func Table() []Engine { return table }

// Lookup finds an engine of the table by name.
func Lookup(name string) (Engine, bool) {
	for _, e := range table {
		if e.Name == name {
			return e, true
		}
	}
	return Engine{}, false
}

// Names lists the engines tokperf knows, in table order.
func Names() []string {
	var out []string
	for _, e := range table {
		out = append(out, e.Name)
	}
	return out
}

// List is Names for messages: "sglang, tgi, … or openai".
func List() string {
	names := Names()
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// MetricNames are an engine's /metrics names (zero for an unknown engine).
func MetricNames(name string) Metrics {
	e, _ := Lookup(name)
	return e.Metrics
}

// DefaultEndpoint is the raw generation endpoint of an engine: its native
// one where tokperf speaks it, else OpenAI completions.
func DefaultEndpoint(name string) string {
	if e, ok := Lookup(name); ok && e.Native {
		return "generate"
	}
	return "completions"
}

// NativeList lists the engines with a native protocol, for messages: "sglang|tgi|…".
func NativeList() string {
	var out []string
	for _, e := range table {
		if e.Native {
			out = append(out, e.Name)
		}
	}
	return strings.Join(out, "|")
}

// Metrics are the metrics an engine exposes for each figure tokperf reads.
type Metrics struct {
	// CountersAtEnd says the token counters move only when a request
	// finishes (llama.cpp), not as tokens are generated: they cannot be
	// set beside the client's rate within a stage.
	CountersAtEnd bool

	Running, Waiting, KV, Preemptions, Generated, Prompt  string
	SpecDrafts, SpecDraftTokens, SpecAccepted, SpecLength string
	CacheHits, CacheQueries, CacheHitRate                 string
}

// Resident is the server process's resident memory in bytes, as the
// Prometheus client libraries of vLLM, SGLang and TGI's router export it
// (and the simulator with degrade.resident_gb): a soak's leak detector.
const Resident = "process_resident_memory_bytes"

// The metrics of tokperf's own simulated server, whichever engine it
// imitates: its engine steps and how many ran late for want of CPU.
const (
	SimSteps       = "tokperf_sim_steps_total"
	SimLateSteps   = "tokperf_sim_late_steps_total"
	SimLatenessMax = "tokperf_sim_lateness_seconds_max"
	// SimLateness is the late steps' lateness summed, in seconds: over a
	// window, the share of it by which the simulator fell behind its
	// profile's pace (the bound a starved stage is judged with).
	SimLateness = "tokperf_sim_lateness_seconds_total"
	// SimStepSeconds and SimBusySeconds are the steps' modelled time and
	// the real time they took: over a window, 1 − Δstep/Δbusy is the share
	// of its pace the simulator lost (the bound a starved stage is judged
	// with).
	SimStepSeconds = "tokperf_sim_step_seconds_total"
	SimBusySeconds = "tokperf_sim_busy_seconds_total"
	// SimHostDropped and SimHostRetrans are the simulator's machine's
	// packets dropped at the kernel's input queue and TCP segments sent
	// again (package netstat): on loopback each is a stall of 200 ms or
	// more in some request.
	SimHostDropped = "tokperf_sim_host_dropped_packets_total"
	SimHostRetrans = "tokperf_sim_host_tcp_retransmits_total"
)
