package sim

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/tokperf/tokperf/internal/infile"
	"github.com/tokperf/tokperf/internal/yamlfile"
)

// Profile describes a simulated deployment: its identity, scheduler limits,
// performance model, wire quirks and faults. Profiles are YAML; the built-in
// ones are embedded from profiles/*.yaml.
type Profile struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Engine is the server imitated: an engine of engine.Table() that the
	// simulator has an imitation of (Engines: sglang, tgi, llamacpp,
	// ollama, vllm, triton, or openai for a plain OpenAI-compatible
	// server). It
	// decides the identity routes and the /metrics names.
	Engine        string  `yaml:"engine"`
	Version       string  `yaml:"version"`
	Model         string  `yaml:"model"`
	ContextLength int     `yaml:"context_length"`
	GPUs          int     `yaml:"gpus"`
	GPU           string  `yaml:"gpu"`
	LoadS         float64 `yaml:"load_s"` // /health answers 503 this long after start
	// Hardware is what the deployment is stated to run: the client holds
	// its figures to what that hardware physically allows, whatever the
	// timing below makes of them. nil: not stated.
	Hardware *Hardware `yaml:"hardware"`

	MaxRunning     int `yaml:"max_running"`     // running requests at most
	KVTokens       int `yaml:"kv_tokens"`       // KV pool, in tokens
	ChunkedPrefill int `yaml:"chunked_prefill"` // tokens per step (decodes + prefill)
	StreamInterval int `yaml:"stream_interval"` // decode steps per chunk
	MaxConcurrent  int `yaml:"max_concurrent"`  // TGI-style 429 past this many open requests; 0: none

	// RequestOverheadMs is each request's own latency before it reaches the
	// scheduler (tokenization, queueing): it delays that request only.
	RequestOverheadMs float64 `yaml:"request_overhead_ms"`

	Decode  Decode  `yaml:"decode"`
	Prefill Prefill `yaml:"prefill"`
	Spec    *Spec   `yaml:"speculative"`
	Chat    Chat    `yaml:"chat"`
	// EOSProbability is the chance, per generated token, that the model ends
	// the output when ignore_eos is off.
	EOSProbability float64 `yaml:"eos_probability"`
	// Jitter is the relative standard deviation of each step's time.
	Jitter float64 `yaml:"jitter"`
	Seed   int64   `yaml:"seed"`
	Wire   Wire    `yaml:"wire"`
	// PrefixCache keeps the KV of prompt blocks for reuse: a prompt's blocks
	// of PrefixCacheBlock tokens are hashed in a chain (a block is reused
	// only when its whole prefix matches), and the blocks a new prompt starts
	// with skip prefill, so its TTFT falls by their prefill time; the last
	// prompt token is always computed. Cached blocks live in free KV, least
	// recently used out first, up to PrefixCacheTokens (default: kv_tokens),
	// and give way to requests that need the space. Hits are reported as
	// usage.prompt_tokens_details.cached_tokens, SGLang's cached_tokens,
	// llama.cpp's cache_n, and in /metrics (vllm:prefix_cache_queries_total
	// and vllm:prefix_cache_hits_total, in tokens; sglang:cache_hit_rate).
	PrefixCache       bool `yaml:"prefix_cache"`
	PrefixCacheBlock  int  `yaml:"prefix_cache_block"`  // tokens a block; default 16
	PrefixCacheTokens int  `yaml:"prefix_cache_tokens"` // the cache's budget
	// Reasoning, when set, makes the chat route stream the first
	// reasoning.tokens tokens of every output on the reasoning channel
	// (delta.reasoning_content, or delta.reasoning with field: reasoning)
	// before any content, counted in
	// usage.completion_tokens_details.reasoning_tokens.
	Reasoning *Reasoning `yaml:"reasoning"`
	// Tools, when set, answers some of the turns that offer tools with a
	// tool call (on the chat, responses and messages routes); wire.tool_calls
	// is the same as tools: {probability: 1}.
	Tools *Tools `yaml:"tools"`
	// Faults by route path ("/v1/completions") or "*" for every generation route.
	Faults map[string]Fault `yaml:"faults"`
	// DieAfter makes the server crash (close every connection and stop)
	// when this many generation requests have arrived; 0: never.
	DieAfter int `yaml:"die_after"`
	// Degrade makes the server get worse as it runs (see Degrade); nil:
	// it never does.
	Degrade *Degrade `yaml:"degrade"`
}

// Tools is how a model answers a turn that offers tools. Which turns call
// is drawn from the request's seed (as its length is), so a replay gets
// the same calls; the call names the tool tool_choice names, else one of
// the tools sent, drawn the same way. Its arguments are a JSON object
// whose first required property (of the tool's parameters; "text" when
// it has none) holds the output's words and whose other required
// properties are empty strings, streamed a token a fragment.
type Tools struct {
	// Probability is the share of the turns offering tools (tool_choice
	// not "none") that answer with a call; tool_choice "required" (or
	// Anthropic's "any" or "tool") always calls.
	Probability float64 `yaml:"probability"`
	// ArgumentsTokens is the length of a call's arguments in tokens,
	// whatever the output length would have been (up to the max tokens);
	// 0: the output's length.
	ArgumentsTokens int `yaml:"arguments_tokens"`
}

// Hardware is a profile's stated GPUs and model; GPU and GPUs, when set,
// stand for the profile's own.
type Hardware struct {
	GPU             string  `yaml:"gpu"`
	GPUs            int     `yaml:"gpus"`
	ParamsB         float64 `yaml:"params_b"`
	ActiveParamsB   float64 `yaml:"active_params_b"`
	Precision       string  `yaml:"precision"`
	KVBytesPerToken float64 `yaml:"kv_bytes_per_token"`
}

// Reasoning is a reasoning model's thinking before its visible answer.
type Reasoning struct {
	Tokens int    `yaml:"tokens"` // the first tokens of each output
	Field  string `yaml:"field"`  // reasoning_content (default) or reasoning
}

// Decode gives the time of one decode step against the batch size, as a
// measured table, a line a + c·B, or a roofline model. Exactly one is set.
type Decode struct {
	Table    []StepPoint `yaml:"table"`
	Linear   *Linear     `yaml:"linear"`
	Roofline *Roofline   `yaml:"roofline"`
	// FixedMs is added to every step (scheduler and launch overhead).
	FixedMs float64 `yaml:"fixed_ms"`
}

// StepPoint is one measured decode step time.
type StepPoint struct {
	Batch  int     `yaml:"batch"`
	StepMs float64 `yaml:"step_ms"`
}

// Linear is t_step = a + c·B.
type Linear struct {
	AMs float64 `yaml:"a_ms"`
	CMs float64 `yaml:"c_ms"`
}

// Roofline derives step times from hardware and model sizes (docs/SIMULATOR.md).
type Roofline struct {
	BandwidthGBs  float64 `yaml:"bandwidth_gb_s"` // HBM per GPU
	TFLOPS        float64 `yaml:"tflops"`         // dense, per GPU, at the weights' precision
	EffBandwidth  float64 `yaml:"eff_bandwidth"`  // η_bw
	EffFLOPS      float64 `yaml:"eff_flops"`      // η_f
	ActiveParamsB float64 `yaml:"active_params_b"`
	WeightsGB     float64 `yaml:"weights_gb"`         // dense weights read every step (all of them for a dense model)
	KVBytesPerTok float64 `yaml:"kv_bytes_per_token"` // κ
	Layers        int     `yaml:"layers"`
	DModel        int     `yaml:"d_model"`
	AllreduceUs   float64 `yaml:"allreduce_us"` // α per all-reduce; only with gpus > 1
	LinkGBs       float64 `yaml:"link_gb_s"`
	MoE           *MoE    `yaml:"moe"`
}

// MoE adds the experts a batch touches to the weights read per step.
type MoE struct {
	Experts  int     `yaml:"experts"`
	TopK     int     `yaml:"top_k"`
	Layers   int     `yaml:"layers"`
	ExpertMB float64 `yaml:"expert_mb"`
}

// Prefill is the cost of prompt tokens.
type Prefill struct {
	FixedMs    float64 `yaml:"fixed_ms"`
	PerTokenUs float64 `yaml:"per_token_us"` // 0 with a roofline: derived from FLOPs
}

// Spec is speculative decoding: k drafts verified per step, each accepted
// with probability Acceptance while the previous ones were.
type Spec struct {
	Method     string  `yaml:"method"`
	Drafts     int     `yaml:"drafts"`
	Acceptance float64 `yaml:"acceptance"`
	DraftMs    float64 `yaml:"draft_ms"`
	// AcceptanceRepetitive, when set, makes acceptance depend on the
	// prompt's text: Acceptance for varied text (no word pair repeated)
	// up to AcceptanceRepetitive for text that only repeats itself, in
	// proportion to the prompt's Repetition. Drafters guess repetitive
	// text better, so synthetic prompts flatter speculation.
	AcceptanceRepetitive float64 `yaml:"acceptance_repetitive"`
}

// Chat is the chat route's own cost: templating and tokenization per
// request, framing and detokenization per chunk.
type Chat struct {
	PerRequestMs float64 `yaml:"per_request_ms"`
	PerChunkMs   float64 `yaml:"per_chunk_ms"`
}

// Wire holds protocol quirks.
type Wire struct {
	// OmitUsage never sends usage or cumulative counts (a server that does not
	// support stream_options), so the client has to count chunks. On the
	// OpenAI routes no usage object is sent even when include_usage is asked;
	// on the native routes the counts a real engine can leave out are left
	// out: TGI's stream carries details only when the request asks for them,
	// llama.cpp's events carry empty token lists (return_tokens off).
	OmitUsage bool `yaml:"omit_usage"`
	// UsageAtEnd ignores continuous_usage_stats: usage comes only in the
	// final chunk (when include_usage is asked), however many tokens each
	// chunk holds, as servers that pack a speculative step's tokens into one
	// chunk without per-chunk counts do. Independent of speculative.
	UsageAtEnd bool `yaml:"usage_at_end"`
	// EventsPerWrite coalesces this many stream chunks into one write and
	// flush, so a client reads several events at once (and sees them arrive
	// together); the last chunk of a stream is written at once. 0 or 1: a
	// write per chunk.
	EventsPerWrite int `yaml:"events_per_write"`
	// ToolCalls answers every request that offers tools (unless its
	// tool_choice is "none") with a call (Tools, probability 1): on the
	// chat route the chunks carry delta.tool_calls (id, type and name in
	// the first, then argument fragments, one a chunk, that join into
	// {"text":"…"}) instead of content, and finish_reason is "tool_calls".
	ToolCalls bool `yaml:"tool_calls"`
	// CloseAfterStream closes the connection after every streamed response
	// (Connection: close on HTTP/1.1), as llama-server drops kept-alive
	// connections, so a client must dial again and may meet a closed idle
	// connection.
	CloseAfterStream bool `yaml:"close_after_stream"`
	// SilentClose, with CloseAfterStream, leaves out the Connection: close
	// header: the connection just ends after the response, as llama-server
	// b10573 does, so a client that pooled it finds it closed when it
	// sends the next request.
	SilentClose bool `yaml:"silent_close"`
	// MetricsAtEnd moves the token counters of /metrics only when a request
	// leaves the engine (finished or cancelled), with all of its tokens at
	// once, as llama.cpp's tokens_predicted_total does, instead of every step.
	MetricsAtEnd bool `yaml:"metrics_at_end"`
	// IgnoreIgnoreEOS ends outputs at EOS even when ignore_eos is asked.
	IgnoreIgnoreEOS bool `yaml:"ignore_ignore_eos"`
	// NoRoutes are generation routes (/v1/responses, /v1/messages, …) the
	// server answers 404 and its OpenAPI document leaves out, as a server
	// of an older version has none of them.
	NoRoutes []string `yaml:"no_routes"`
	// WrongAnswers answers exact-answer questions wrongly: a fast but
	// broken configuration that correctness checks must catch.
	WrongAnswers bool `yaml:"wrong_answers"`
	// RequestTimes reports each request's time before its first forward
	// step, as a server started to do so does: SGLang's last meta_info
	// gains inference_time (--enable-metrics), from the request's first
	// step (its admission) to its end; vLLM's usage chunk gains its
	// metrics object (queue_time_ms …) when the request asks
	// include_metrics (--enable-per-request-metrics).
	RequestTimes bool `yaml:"request_times"`
}

// faultRoutes are the routes faults can strike: the generation routes,
// and "*" for all of them. A fault on any other route would never strike
// (every other route answers as it always does, an unknown one 404), so a
// profile naming one is refused rather than silently injecting nothing.
var faultRoutes = map[string]bool{
	"*": true, "/v1/completions": true, "/v1/chat/completions": true, "/v1/responses": true, "/v1/messages": true, "/generate": true,
	"/generate_stream": true, "/completion": true, "/api/generate": true, "/api/chat": true,
}

const faultRouteList = "/v1/completions, /v1/chat/completions, /v1/responses, /v1/messages, /generate, /generate_stream, /completion, /api/generate, /api/chat"

// Fault is injected misbehaviour on a route; rates are per request.
type Fault struct {
	HTTP500      float64 `yaml:"http_500"`
	HTTP503      float64 `yaml:"http_503"`
	HTTP429      float64 `yaml:"http_429"`
	Reset        float64 `yaml:"reset"` // connection reset mid-stream
	Stall        float64 `yaml:"stall"` // stop sending mid-stream for StallS
	StallS       float64 `yaml:"stall_s"`
	Malformed    float64 `yaml:"malformed"`    // one chunk of broken JSON
	Truncate     float64 `yaml:"truncate"`     // end without finish or [DONE]
	SlowHeaders  float64 `yaml:"slow_headers"` // delay the response headers by SlowHeadersS
	SlowHeadersS float64 `yaml:"slow_headers_s"`
	// RetryAfter is sent as the Retry-After header of the injected 429 and
	// 503 answers, as written: seconds ("5") or an HTTP-date.
	RetryAfter string `yaml:"retry_after"`
}

//go:embed profiles/*.yaml
var builtin embed.FS

// Profiles lists the built-in profiles, sorted by name.
func Profiles() []*Profile {
	entries, err := builtin.ReadDir("profiles")
	if err != nil {
		panic(err) // embedded at build time
	}
	var out []*Profile
	for _, e := range entries {
		data, err := builtin.ReadFile(path.Join("profiles", e.Name()))
		if err != nil {
			panic(err)
		}
		p, err := ParseProfile(e.Name(), data)
		if err != nil {
			panic(fmt.Sprintf("built-in profile: %v", err)) // a test loads each one
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// aliases are other names the built-in profiles answer to.
var aliases = map[string]string{
	"seed":                "seed-qwen3.5-397b-8x-rtxpro6000",
	"seed-mtp":            "seed-qwen3.5-397b-8x-rtxpro6000-mtp",
	"llama-3.1-8b-h100":   "llama-3.1-8b-1xh100",
	"llama-3.1-8b-1xh100": "llama-3.1-8b-1xh100",
}

// LoadProfile finds a built-in profile by name or alias, or reads a YAML
// file when name ends in .yaml or .yml or contains a path separator.
func LoadProfile(name string) (*Profile, error) {
	if strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.ContainsRune(name, os.PathSeparator) {
		data, err := infile.ReadAll(context.Background(), name, infile.Config)
		if err != nil {
			return nil, fmt.Errorf("reading profile: %w", err)
		}
		return ParseProfile(name, data)
	}
	want := name
	if a, ok := aliases[name]; ok {
		want = a
	}
	var names []string
	for _, p := range Profiles() {
		if p.Name == want {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return nil, fmt.Errorf("unknown simulator profile %q (built in: seed, seed-mtp, %s; or a .yaml file)", name, strings.Join(names, ", "))
}

// ParseProfile decodes and validates a profile. Errors name the file, the
// line and the field.
func ParseProfile(file string, data []byte) (*Profile, error) {
	p := &Profile{}
	if err := yamlfile.Decode(file, data, p); err != nil {
		return nil, err
	}
	if err := errors.Join(p.fill(), p.fillTools(), p.checkNoRoutes()); err != nil {
		return nil, yamlfile.Locate(file, data, err)
	}
	if err := p.Hardware.check(); err != nil {
		return nil, yamlfile.Locate(file, data, err)
	}
	return p, nil
}

// weightBytes is the bytes a weight of the stated precision takes, as
// llama-server's meta.size counts them (2 where the precision is not one
// of these).
func (h *Hardware) weightBytes() float64 {
	switch strings.ToLower(h.Precision) {
	case "fp32":
		return 4
	case "fp8", "int8", "q8_0":
		return 1
	case "fp4", "nvfp4", "mxfp4", "int4", "q4_0":
		return 0.5
	}
	return 2
}

// check refuses stated hardware no bound could rest on.
func (h *Hardware) check() error {
	switch {
	case h == nil:
		return nil
	case h.GPUs < 0:
		return bad("hardware.gpus", "must not be negative, got %d", h.GPUs)
	case !(h.ParamsB > 0) || h.ParamsB > 1e6:
		return bad("hardware.params_b", "must be the model's parameters in billions, got %v", h.ParamsB)
	case h.ActiveParamsB < 0 || h.ActiveParamsB > h.ParamsB:
		return bad("hardware.active_params_b", "must be between 0 (all) and params_b (%v), got %v", h.ParamsB, h.ActiveParamsB)
	case h.Precision == "":
		return bad("hardware.precision", "is required with params_b (bf16, fp8, int4 …)")
	case h.KVBytesPerToken < 0:
		return bad("hardware.kv_bytes_per_token", "must not be negative, got %v", h.KVBytesPerToken)
	}
	return nil
}

func bad(field, format string, args ...any) error { return yamlfile.Fieldf(field, format, args...) }

// fill sets defaults and checks every field a run depends on.
func (p *Profile) fill() error {
	if p.Name == "" {
		return bad("name", "is required")
	}
	if p.Engine == "" {
		p.Engine = "vllm"
	}
	if !Imitates(p.Engine) {
		return bad("engine", "%q is not one of %s", p.Engine, strings.Join(Engines(), ", "))
	}
	if p.Model == "" {
		p.Model = p.Name
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&p.ContextLength, 32768)
	def(&p.GPUs, 1)
	def(&p.MaxRunning, 256)
	def(&p.KVTokens, 1<<20)
	def(&p.ChunkedPrefill, 8192)
	def(&p.StreamInterval, 1)
	for _, c := range []struct {
		name string
		v    int
	}{{"context_length", p.ContextLength}, {"gpus", p.GPUs}, {"max_running", p.MaxRunning}, {"kv_tokens", p.KVTokens}, {"chunked_prefill", p.ChunkedPrefill}, {"stream_interval", p.StreamInterval}} {
		if c.v < 0 {
			return bad(c.name, "must be positive, got %d", c.v)
		}
	}
	if p.Wire.EventsPerWrite < 0 || p.Wire.EventsPerWrite > 1000 {
		return bad("wire.events_per_write", "must be 0..1000, got %d", p.Wire.EventsPerWrite)
	}
	if !p.PrefixCache && p.PrefixCacheBlock != 0 {
		return bad("prefix_cache_block", "needs prefix_cache: true")
	}
	if !p.PrefixCache && p.PrefixCacheTokens != 0 {
		return bad("prefix_cache_tokens", "needs prefix_cache: true")
	}
	if p.PrefixCache {
		def(&p.PrefixCacheBlock, 16)
		def(&p.PrefixCacheTokens, p.KVTokens)
		if p.PrefixCacheBlock < 1 || p.PrefixCacheBlock > 4096 {
			return bad("prefix_cache_block", "must be 1..4096 tokens, got %d", p.PrefixCacheBlock)
		}
		if p.PrefixCacheTokens < p.PrefixCacheBlock || p.PrefixCacheTokens > p.KVTokens {
			return bad("prefix_cache_tokens", "must be between a block (%d) and kv_tokens (%d), got %d", p.PrefixCacheBlock, p.KVTokens, p.PrefixCacheTokens)
		}
	}
	if r := p.Reasoning; r != nil {
		if r.Tokens < 1 || r.Tokens > 1<<20 {
			return bad("reasoning.tokens", "must be 1..1048576, got %d", r.Tokens)
		}
		switch r.Field {
		case "":
			r.Field = "reasoning_content"
		case "reasoning_content", "reasoning":
		default:
			return bad("reasoning.field", "must be reasoning_content or reasoning, got %q", r.Field)
		}
	}
	if p.Degrade != nil {
		if err := p.Degrade.check(); err != nil {
			return err
		}
	}
	if p.DieAfter < 0 {
		return bad("die_after", "must not be negative")
	}
	if p.MaxConcurrent < 0 {
		return bad("max_concurrent", "must not be negative")
	}
	if p.LoadS < 0 {
		return bad("load_s", "must not be negative")
	}
	n := 0
	if len(p.Decode.Table) > 0 {
		n++
		prev := 0
		for i, pt := range p.Decode.Table {
			f := fmt.Sprintf("decode.table[%d]", i)
			if pt.Batch <= prev {
				return bad(f+".batch", "batches must be positive and increasing, got %d after %d", pt.Batch, prev)
			}
			if !(pt.StepMs > 0) || math.IsInf(pt.StepMs, 0) {
				return bad(f+".step_ms", "must be positive, got %v", pt.StepMs)
			}
			prev = pt.Batch
		}
	}
	if l := p.Decode.Linear; l != nil {
		n++
		if !(l.AMs > 0) || l.CMs < 0 || math.IsInf(l.AMs+l.CMs, 0) {
			return bad("decode.linear", "needs a_ms > 0 and c_ms >= 0")
		}
	}
	if r := p.Decode.Roofline; r != nil {
		n++
		if err := r.check(); err != nil {
			return err
		}
	}
	if n != 1 {
		return bad("decode", "give exactly one of table, linear or roofline (got %d)", n)
	}
	if p.Decode.FixedMs < 0 || p.Prefill.FixedMs < 0 || p.Prefill.PerTokenUs < 0 {
		return bad("prefill", "times must not be negative")
	}
	if p.Prefill.PerTokenUs == 0 && p.Decode.Roofline == nil {
		return bad("prefill.per_token_us", "is required unless decode is a roofline")
	}
	if s := p.Spec; s != nil {
		if s.Drafts < 1 || s.Drafts > 16 {
			return bad("speculative.drafts", "must be 1..16, got %d", s.Drafts)
		}
		if !(s.Acceptance >= 0 && s.Acceptance < 1) {
			return bad("speculative.acceptance", "must be in [0, 1), got %v", s.Acceptance)
		}
		if s.DraftMs < 0 {
			return bad("speculative.draft_ms", "must not be negative")
		}
		if !(s.AcceptanceRepetitive >= 0 && s.AcceptanceRepetitive < 1) {
			return bad("speculative.acceptance_repetitive", "must be in [0, 1), got %v", s.AcceptanceRepetitive)
		}
	}
	if p.RequestOverheadMs < 0 {
		return bad("request_overhead_ms", "must not be negative")
	}
	if p.Chat.PerChunkMs < 0 || p.Chat.PerRequestMs < 0 {
		return bad("chat", "overheads must not be negative")
	}
	if !(p.EOSProbability >= 0 && p.EOSProbability < 1) {
		return bad("eos_probability", "must be in [0, 1), got %v", p.EOSProbability)
	}
	if !(p.Jitter >= 0 && p.Jitter < 0.5) {
		return bad("jitter", "must be in [0, 0.5), got %v", p.Jitter)
	}
	for route, f := range p.Faults {
		if !faultRoutes[route] {
			return bad("faults."+route, "is not a generation route of the simulator (want \"*\" or one of %s)", faultRouteList)
		}
		for name, r := range map[string]float64{"http_500": f.HTTP500, "http_503": f.HTTP503, "http_429": f.HTTP429, "reset": f.Reset, "stall": f.Stall, "malformed": f.Malformed, "truncate": f.Truncate, "slow_headers": f.SlowHeaders} {
			if !(r >= 0 && r <= 1) {
				return bad("faults."+route+"."+name, "is a rate per request in [0, 1], got %v", r)
			}
		}
		if f.StallS < 0 || f.SlowHeadersS < 0 {
			return bad("faults."+route, "durations must not be negative")
		}
	}
	return nil
}

func (r *Roofline) check() error {
	for name, v := range map[string]float64{"bandwidth_gb_s": r.BandwidthGBs, "tflops": r.TFLOPS, "eff_bandwidth": r.EffBandwidth, "eff_flops": r.EffFLOPS, "active_params_b": r.ActiveParamsB, "weights_gb": r.WeightsGB} {
		if !(v > 0) || math.IsInf(v, 0) {
			return bad("decode.roofline."+name, "must be positive, got %v", v)
		}
	}
	if r.EffBandwidth > 1 || r.EffFLOPS > 1 {
		return bad("decode.roofline", "efficiencies are fractions in (0, 1]")
	}
	if r.KVBytesPerTok < 0 || r.AllreduceUs < 0 || r.LinkGBs < 0 || r.Layers < 0 || r.DModel < 0 {
		return bad("decode.roofline", "sizes must not be negative")
	}
	if m := r.MoE; m != nil {
		if m.Experts < 1 || m.TopK < 1 || m.TopK > m.Experts || m.Layers < 1 || !(m.ExpertMB > 0) {
			return bad("decode.roofline.moe", "needs experts >= top_k >= 1, layers >= 1, expert_mb > 0")
		}
	}
	return nil
}

// fillTools checks the tools option and makes wire.tool_calls its
// shorthand.
func (p *Profile) fillTools() error {
	if p.Wire.ToolCalls {
		if p.Tools != nil {
			return bad("tools", "give tools or wire.tool_calls, not both")
		}
		p.Tools = &Tools{Probability: 1}
	}
	t := p.Tools
	if t == nil {
		return nil
	}
	if !(t.Probability >= 0 && t.Probability <= 1) {
		return bad("tools.probability", "must be 0..1, got %v", t.Probability)
	}
	if t.ArgumentsTokens < 0 || t.ArgumentsTokens > 1<<20 {
		return bad("tools.arguments_tokens", "must be 0..1048576, got %d", t.ArgumentsTokens)
	}
	return nil
}

// checkNoRoutes refuses a wire.no_routes entry that is not a route the
// simulator could leave out.
func (p *Profile) checkNoRoutes() error {
	for i, r := range p.Wire.NoRoutes {
		if !slices.Contains(apiRoutes, r) {
			return bad(fmt.Sprintf("wire.no_routes[%d]", i), "%q is not one of %s", r, strings.Join(apiRoutes, ", "))
		}
	}
	return nil
}
