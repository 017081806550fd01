package record

// Preset is the published test shape a run took its settings from
// (--preset): what it set, what the user's own flags kept, where its
// figures come from, and how the run is judged by it.
type Preset struct {
	Name string `json:"name"` // as given, with its argument: inferencex:8k1k, mlperf-server:llama2-70b
	// Set are the flags the preset set, "--flag value", in its order.
	Set []string `json:"set"`
	// Kept are the flags the user gave that the preset would have set,
	// "--flag yours (preset: its)": the user's win.
	Kept   []string `json:"kept,omitempty"`
	Source string   `json:"source"` // where its figures come from: repository, path, commit
	// Judge is "p99" when the run is judged on its SLO at the 99th
	// percentile of the measured requests (MLPerf's Server scenario),
	// over stages of at least MinDurationS; Figures is "interactivity"
	// when the report sets InferenceX's per-GPU throughput and 1000/TPOT
	// per level; empty: neither.
	Judge        string  `json:"judge,omitempty"`
	MinDurationS float64 `json:"min_duration_s,omitempty"`
	Figures      string  `json:"figures,omitempty"`
}
