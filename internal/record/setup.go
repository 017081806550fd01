package record

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
	Usage     string   `json:"usage,omitempty"`       // "final": OpenAI routes asked for the final usage only
	Model     string   `json:"model"`
	Server    Server   `json:"server"`
	Workload  Workload `json:"workload"`
	Load      Load     `json:"load"`
	Sampling  Sampling `json:"sampling"`
	GPUs      int      `json:"gpus,omitempty"` // as the user stated or the simulator models
	GPU       string   `json:"gpu,omitempty"`  // GPU type
	SLO       SLO      `json:"slo,omitzero"`
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
	Engine  string         `json:"engine"`            // sglang, vllm, tgi, llamacpp, ollama, openai
	Version string         `json:"version,omitempty"` // as reported
	Info    map[string]any `json:"info,omitempty"`    // the identity route's answer, trimmed
	// Evidence are the identity routes whose answers matched the engine;
	// Doubt says why detection did not take the engine they point to.
	Evidence []string `json:"evidence,omitempty"`
	Doubt    string   `json:"doubt,omitempty"`
}

// Workload is what each request asks for.
type Workload struct {
	InputTokens  int   `json:"input_tokens"`
	OutputTokens int   `json:"output_tokens"`
	IgnoreEOS    bool  `json:"ignore_eos"`
	Seed         int64 `json:"seed"`
	SharedPrefix int   `json:"shared_prefix,omitempty"` // tokens all prompts share
	// Prompts describes where prompts came from when not the fixed word
	// list: synthetic prose, a corpus or a dataset, the length
	// distributions, and whether a tokenizer counted them or they are
	// estimated.
	Prompts   string `json:"prompts,omitempty"`
	Tokenizer string `json:"tokenizer,omitempty"` // the tokenizer that counted prompts
	Input     string `json:"input,omitempty"`     // the input length distribution, when not fixed
	Output    string `json:"output,omitempty"`    // the output length distribution, when not fixed
}

// Load is how many requests start and when.
type Load struct {
	Concurrency []int   `json:"concurrency,omitempty"` // one stage per level
	Rate        float64 `json:"rate,omitempty"`        // requests/s, open loop
	Arrival     string  `json:"arrival,omitempty"`     // poisson or constant
	Requests    int     `json:"requests,omitempty"`    // per stage; 0: max(4, 2×C)
	DurationS   float64 `json:"duration_s,omitempty"`  // per stage, instead of Requests
	Warmup      int     `json:"warmup"`                // warm-up requests per stage; -1: one round
	TimeoutS    float64 `json:"timeout_s"`             // per request
	// TimerLateP99Ms is how late this machine's timers woke (p99 of a
	// probe at the start of an open-loop run): sends are late only past it.
	TimerLateP99Ms float64 `json:"timer_late_p99_ms,omitempty"`
	// SliceS is the length of the time slices the run's stages were cut
	// into (--slice, soak); 0: none.
	SliceS float64 `json:"slice_s,omitempty"`
	// Repeat is how many times each stage ran (--repeat); 0 or 1: once.
	Repeat int `json:"repeat,omitempty"`
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
