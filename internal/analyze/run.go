package analyze

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stability"
	"github.com/tokperf/tokperf/internal/summary"
)

// RunSchema names the JSON form of a Run and its version.
const RunSchema = "tokperf-run/1"

// Run is the model of one run's results: what was measured, each stage's
// figures beside what the server's counters and the GPUs said over the
// same window, the warnings and the verdict, all as numbers, with the
// sentences rendered from them. A live run and its result file give the
// same Run, because both are built by one Fold.
type Run struct {
	Schema   string       `json:"schema"`
	File     string       `json:"file,omitempty"`
	Setup    record.Setup `json:"setup"`
	OpenLoop bool         `json:"open_loop"`
	Stages   []Stage      `json:"stages"`
	// Percentiles are the ones the text table shows (--percentiles; nil:
	// the report's default); a view setting, not a figure.
	Percentiles []float64 `json:"-"`
	// Wide says the text table shows every column (--wide), not the
	// compact layout that fits 100 columns; a view setting too.
	Wide     bool      `json:"-"`
	Warnings []Warning `json:"warnings"`
	// Verdict is the scaling verdict of a closed-loop run of two or more
	// levels; nil otherwise.
	Verdict *ScalingVerdict `json:"verdict,omitempty"`
	// Twin is the digital twin fitted to the run's own levels when its
	// verdict asks for more levels (the prediction the verdict quotes) or
	// --until-saturated ran levels beyond them (each predicted before it
	// ran, set beside what it measured); nil otherwise (METRICS.md §10).
	Twin *Twin `json:"twin,omitempty"`
	// Integrity says whether the file behind the run is whole.
	Integrity Integrity `json:"integrity"`
	// Source is set when the figures come from another tool's result
	// file (ForeignRun): its definitions and the figures it lacks.
	Source *Source `json:"source,omitempty"`
	// Repeats are each level's figures across its repeats (--repeat);
	// absent when each level ran once.
	Repeats []Repeats `json:"repeats,omitempty"`
	// Sharding is set when the run was merged from its shards' files
	// (--shard I/N): each shard's part, clock and lateness.
	Sharding *Sharding `json:"sharding,omitempty"`
	// Capacity is a capacity search's answer (--until-slo); nil otherwise.
	Capacity *Capacity `json:"capacity,omitempty"`
	// Shape is what the run's preset (--preset) makes of its figures:
	// InferenceX's per-level figures, MLPerf's Server verdict; nil
	// without one.
	Shape *Shape `json:"preset,omitempty"`
}

// Integrity is what a reader found about a result file's completeness.
type Integrity struct {
	Records     int  `json:"records"`     // measured requests (warm-up excluded)
	Truncated   bool `json:"truncated"`   // the last line was cut short
	Ended       bool `json:"ended"`       // the end line is there
	Interrupted bool `json:"interrupted"` // the run was stopped by a signal
	// Duplicates are request lines skipped for repeating an id read
	// before in the same file: counted once, never summed twice.
	Duplicates int `json:"duplicates,omitempty"`
}

// Stage is one stage's figures with the server's and the GPUs' readings.
type Stage struct {
	summary.Stage
	Server *ServerReading `json:"server,omitempty"`
	GPU    *GPUReading    `json:"gpu,omitempty"`
	// Cost is the output tokens' cost at the GPU-hour price and Bound the
	// most the stated hardware allows (Run.Account); nil where unknown.
	Cost  *Cost  `json:"cost,omitempty"`
	Bound *Bound `json:"bound,omitempty"`
	// Host is what the client's machine did over the stage (CPU wait,
	// pressure, steal, the client's own retransmits); absent in files
	// written before it was read.
	Host *record.Host `json:"host,omitempty"`
	// Slices are the stage's time slices (--slice, soak) and Stability
	// their verdict; absent for a stage not cut into slices.
	Slices    []record.Slice     `json:"slices,omitempty"`
	Stability *stability.Verdict `json:"stability,omitempty"`
	// StabilityBasis is what the stability verdict rests on; when it is
	// withheld the verdict's kind is not_judged and its text says why.
	StabilityBasis *Basis `json:"stability_basis,omitempty"`
	// Timeline is a bounded, deterministic sample of the stage's requests
	// and Series its server and GPU readings over time, for the charts of
	// the html and png formats; not in the JSON (they are samples, not
	// figures).
	Timeline *Timeline `json:"-"`
	Series   *Series   `json:"-"`
	// samples are the per-request values comparisons test (KeepSamples).
	samples *Samples
	// limit holds the TTFT and TPOT a judging preset reads (preset.go).
	limit *limitAcc
}

// Samples are the per-request values an A/B test needs of a stage: output
// tokens and latency (s) for the aggregate's interval, decode tok/s, TTFT ms.
type Samples struct {
	Pairs  [][2]float64
	Decode []float64
	TTFT   []float64
	// Reqs are the same requests with their end times, in the order they
	// came, for the time blocks of an A/B (nil for another tool's lists,
	// whose order then stands in for time).
	Reqs []Req
}

// Samples are the stage's per-request values, nil unless the Fold kept them.
func (s *Stage) Samples() *Samples { return s.samples }

// Key names a stage across runs: closed-loop stages by concurrency,
// open-loop ones by rate (and cap), so two runs' stages can be paired.
func (s *Stage) Key() StageKey { return StageKey{Concurrency: s.Concurrency, Rate: s.Rate} }

// StageKey is what makes two runs' stages comparable.
type StageKey struct {
	Concurrency int
	Rate        float64
}

// Fold builds a Run from a result's lines as they come, keyed by stage:
// records (warm-up ones are skipped by the figures), server metrics
// samples and GPU readings, in any order. It holds per stage only what
// summary.Acc keeps, plus per-request samples when asked.
type Fold struct {
	setup   record.Setup
	file    string
	keep    bool
	stages  map[int]*foldStage
	integ   Integrity
	openRun bool
	// slices by stage: a slice may come before its stage's first record.
	slices map[int][]record.Slice
}

type foldStage struct {
	acc      *summary.Acc
	timeline *timelineAcc
	samples  *Samples
	metrics  []record.ServerSample
	gpu      []record.GPUSample
	host     *record.Host
	limit    *limitAcc // a judging preset's samples (preset.go)
}

// NewFold starts the fold of a run with setup, from file (empty for none).
func NewFold(setup record.Setup, file string) *Fold {
	return &Fold{setup: setup, file: file, stages: map[int]*foldStage{}}
}

// KeepSamples makes the fold keep the per-request samples A/B tests need.
func (f *Fold) KeepSamples() { f.keep = true }

func (f *Fold) stage(i, concurrency int) *foldStage {
	s := f.stages[i]
	if s == nil {
		s = &foldStage{acc: summary.NewAcc(concurrency, f.setup.SLO), timeline: newTimelineAcc()}
		s.acc.TimerLate(time.Duration(f.setup.Load.TimerLateP99Ms * float64(time.Millisecond)))
		if f.setup.Workload.Agent != "" {
			s.acc.TrackSessions()
		}
		if f.keep {
			s.samples = &Samples{}
		}
		if p := f.setup.Preset; p != nil && p.Judge == "p99" {
			s.limit = &limitAcc{}
		}
		f.stages[i] = s
	}
	return s
}

// Grow makes room for n requests of stage i (at concurrency c), so a stage
// of known size never copies its samples to grow them.
func (f *Fold) Grow(i, c, n int) { f.stage(i, c).acc.Grow(n) }

// Add takes one finished record.
func (f *Fold) Add(r *record.Record) {
	if !r.Warmup {
		f.integ.Records++
	}
	if r.Rate > 0 {
		f.openRun = true
	}
	s := f.stage(r.Stage, r.Concurrency)
	s.acc.Add(r)
	if !r.Warmup {
		s.timeline.add(r)
		s.limit.add(r)
	}
	if s.samples == nil || r.Warmup || !r.OK() {
		return
	}
	q := Req{Done: r.Done.Seconds(), Tokens: float64(r.OutputTokens), Latency: math.NaN(), TTFT: math.NaN(), Decode: math.NaN()}
	if lat, ok := r.E2E(); ok {
		s.samples.Pairs = append(s.samples.Pairs, [2]float64{float64(r.OutputTokens), lat.Seconds()})
		q.Latency = lat.Seconds()
	}
	if d, ok := r.DecodeTokS(); ok {
		s.samples.Decode = append(s.samples.Decode, d)
		q.Decode = d
	}
	if ttft, ok := r.TTFT(); ok {
		s.samples.TTFT = append(s.samples.TTFT, record.Ms(ttft))
		q.TTFT = record.Ms(ttft)
	}
	s.samples.Reqs = append(s.samples.Reqs, q)
}

// Metrics takes server /metrics samples; each names its stage.
func (f *Fold) Metrics(samples []record.ServerSample) {
	for _, m := range samples {
		if s := f.stages[m.Stage]; s != nil {
			s.metrics = append(s.metrics, m)
		}
	}
}

// Host takes the stages' host readings; each names its stage, and a
// stage's second reading (a sharded run's other shards) adds to the first.
func (f *Fold) Host(hs ...record.Host) {
	for _, h := range hs {
		s := f.stages[h.Stage]
		if s == nil {
			continue
		}
		if s.host == nil {
			s.host = &h
			continue
		}
		s.host.CPURunS += h.CPURunS
		s.host.CPUWaitS += h.CPUWaitS
		s.host.Retrans += h.Retrans
		s.host.PressureS = max(s.host.PressureS, h.PressureS)
		s.host.Steal = max(s.host.Steal, h.Steal)
	}
}

// GPU takes GPU readings; each names its stage.
func (f *Fold) GPU(samples []record.GPUSample) {
	for _, g := range samples {
		if s := f.stages[g.Stage]; s != nil {
			s.gpu = append(s.gpu, g)
		}
	}
}

// Slices takes time slices; each names its stage.
func (f *Fold) Slices(slices []record.Slice) {
	if f.slices == nil {
		f.slices = map[int][]record.Slice{}
	}
	for _, sl := range slices {
		f.slices[sl.Stage] = append(f.slices[sl.Stage], sl)
	}
}

// Figures are stage i's figures so far (the zero Stage when it has none).
func (f *Fold) Figures(i int) summary.Stage {
	s := f.stages[i]
	if s == nil {
		return summary.Stage{Index: i}
	}
	st := s.acc.Stage()
	st.Index = i
	return st
}

// Duplicates adds n request lines the reader skipped for repeating an id.
func (f *Fold) Duplicates(n int) { f.integ.Duplicates += n }

// Integrity records what the reader found about the file's end.
func (f *Fold) Integrity(truncated, ended, interrupted bool) {
	f.integ.Truncated, f.integ.Ended, f.integ.Interrupted = truncated, ended, interrupted
}

// Run computes the run's model from what was folded so far. Stages come
// in the order they ran; a closed-loop run's are sorted by concurrency.
func (f *Fold) Run() *Run {
	run := &Run{Schema: RunSchema, File: f.file, Setup: f.setup, OpenLoop: f.openRun, Integrity: f.integ}
	idx := make([]int, 0, len(f.stages))
	for i := range f.stages {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	names := engine.MetricNames(f.setup.Server.Engine)
	var levels []Level
	for _, i := range idx {
		fs := f.stages[i]
		st := Stage{Stage: fs.acc.Stage(), samples: fs.samples, limit: fs.limit}
		st.Index = i
		if st.Requests == 0 {
			continue // only warm-up finished
		}
		st.Server = ServerOf(fs.acc, fs.metrics, names)
		st.GPU = GPUOf(st.Stage, fs.acc, fs.gpu)
		st.Host = fs.host
		if sl := f.slices[i]; len(sl) > 0 {
			st.Slices = sl
			v := Stability(sl, time.Duration(f.setup.Load.SliceS*float64(time.Second)))
			st.Stability = &v
		}
		st.Timeline = fs.timeline.timeline()
		st.Series = SeriesOf(fs.acc, fs.metrics, fs.gpu, names)
		run.Stages = append(run.Stages, st)
		if lim := f.setup.Load.UntilSLO; lim.Set() {
			levels = append(levels, JudgeLevel(fs.acc.SessionSamples(), st.Concurrency, lim))
		}
	}
	if lim := f.setup.Load.UntilSLO; lim.Set() {
		run.Capacity = NewCapacity(levels, lim)
	}
	if !run.OpenLoop {
		slices.SortStableFunc(run.Stages, func(a, b Stage) int { return a.Concurrency - b.Concurrency })
	}
	run.Repeats = RepeatsOf(run.Stages)
	run.Warnings = append(runWarnings(run), repeatWarnings(run.Repeats)...)
	run.Account() // [] in JSON, not null, when no warning
	// Scaling is judged over every repeat of each level.
	if levels := run.levels(); !run.OpenLoop && len(levels) >= 2 {
		v := ScalingCapped(levels, run.RunningCap())
		if run.Repeats != nil {
			v.Text += fmt.Sprintf(" (means over the repeats: %s)", repeatCounts(run.Repeats))
		}
		run.Verdict = &v
	}
	run.gate()
	run.Shape = shapeOf(run)
	return run
}

// Figures are the stages' figures alone.
func (r *Run) Figures() []summary.Stage {
	out := make([]summary.Stage, len(r.Stages))
	for i, s := range r.Stages {
		out[i] = s.Stage
	}
	return out
}

// Failed counts the measured requests that failed (interrupted ones
// aside) and all measured requests, over every stage.
func (r *Run) Failed() (failed, total int) {
	for _, s := range r.Stages {
		failed += s.Requests - s.OK - s.Cancelled
		total += s.Requests - s.Cancelled
	}
	return failed, total
}

// Find is the stage with key k, nil if the run has none.
func (r *Run) Find(k StageKey) *Stage {
	for i := range r.Stages {
		if r.Stages[i].Key() == k {
			return &r.Stages[i]
		}
	}
	return nil
}

// runWarnings runs every check on a run: the stages' own, then what the
// server's counters showed, stage by stage.
func runWarnings(r *Run) []Warning {
	asked := Asked{IgnoreEOS: r.Setup.Workload.IgnoreEOS, Engine: r.Setup.Server.Engine, OpenLoop: r.OpenLoop, Simulated: r.Setup.Simulated,
		SharedPrefix: r.Setup.Workload.SharedPrefix, Reuse: r.Setup.Workload.Reuse, Thinking: r.Setup.Workload.ThinkS > 0 || r.Setup.Workload.Agent != "" || r.Setup.Workload.Input == "agent trace", Chat: slices.Contains([]string{"chat", "api-chat", "responses", "messages"}, r.Setup.Endpoint)}
	if r.Setup.Workload.Output == "" {
		// Only a fixed length is what every request asked for: a dataset's
		// requests ask for its own lengths, a distribution's for its draws.
		asked.OutputTokens = r.Setup.Workload.OutputTokens
	}
	ws := Warnings(r.Figures(), asked)
	for _, s := range r.Stages {
		if s.Server != nil {
			// Hits are the point of a workload that reuses on purpose: the
			// check knows (asked.Reuse).
			ws = append(ws, s.Server.warnings(s.Stage, asked)...)
		}
		if w := stabilityWarning(&s); w != nil {
			ws = append(ws, *w)
		}
	}
	if w, ok := ollamaTemplate(r); ok {
		ws = append(ws, w)
	}
	return ws
}

// ollamaTemplate warns that Ollama's /v1/completions is not a raw
// completion: it applies the model's chat template to the prompt (a
// 2-word prompt counted 29 prompt tokens on v0.17.4). The table says
// which engines do (engine.TemplatedCompletions); Ollama is the one.
func ollamaTemplate(r *Run) (Warning, bool) {
	if e, _ := engine.Lookup(r.Setup.Server.Engine); !e.TemplatedCompletions || r.Setup.Endpoint != "completions" {
		return Warning{}, false
	}
	text := "Ollama's /v1/completions applies the model's chat template to the prompt: it is not a raw completion, and TTFT covers the template's tokens"
	prompt, ok := 0, 0
	for _, s := range r.Figures() {
		prompt, ok = prompt+s.PromptTokens, ok+s.OK
	}
	if asked := r.Setup.Workload.InputTokens; ok > 0 && asked > 0 && prompt > 0 {
		text += fmt.Sprintf(" (the server counted %.0f prompt tokens per request where %d were asked)", float64(prompt)/float64(ok), asked)
	}
	return Warning{Check: "ollama_template", Text: text + "; --endpoint generate sends the prompt raw (/api/generate with raw: true)"}, true
}

// finite is v, or nil when it is NaN or infinite (JSON has neither).
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func jsonOf(v any) ([]byte, error) { return json.Marshal(v) }
