package record

// Limits is what a server states about its own capacity, read from the
// answers its identity routes gave (Server.Info); zero is unknown. The twin,
// the saturation verdict and --until-saturated take a stated cap over a
// guess, and bracket what stays unknown.
type Limits struct {
	// MaxRunning is how many requests it runs at once at most (SGLang's
	// max_running_requests, llama.cpp's slots).
	MaxRunning int `json:"max_running,omitempty"`
	// ChunkedPrefill is the prefill tokens one step takes at most; -1 says
	// prefill is not chunked.
	ChunkedPrefill int `json:"chunked_prefill,omitempty"`
	// KVTokens is the KV cache's size in tokens.
	KVTokens int `json:"kv_tokens,omitempty"`
	// From names where each known limit was read ("/server_info
	// max_running_requests").
	From []string `json:"from,omitempty"`
}

// statedKeys are the identity answers' fields that state a limit, by engine.
var statedKeys = map[string][]struct {
	key, route string
	set        func(*Limits, int)
}{
	"sglang": {
		{"max_running_requests", "/server_info", func(l *Limits, n int) { l.MaxRunning = n }},
		{"chunked_prefill_size", "/server_info", func(l *Limits, n int) {
			if n <= 0 {
				n = -1 // SGLang's -1 (or 0) turns chunking off
			}
			l.ChunkedPrefill = n
		}},
		{"max_total_num_tokens", "/server_info", func(l *Limits, n int) { l.KVTokens = n }},
	},
	"llamacpp": {
		{"total_slots", "/props", func(l *Limits, n int) { l.MaxRunning = n }},
	},
}

// StatedLimits reads the limits a detected server stated in its identity
// answer; the zero Limits when it stated none.
func StatedLimits(s Server) Limits {
	var l Limits
	for _, k := range statedKeys[s.Engine] {
		v, ok := s.Info[k.key].(float64)
		if !ok || v != float64(int(v)) {
			continue
		}
		k.set(&l, int(v))
		l.From = append(l.From, k.route+" "+k.key)
	}
	return l
}
