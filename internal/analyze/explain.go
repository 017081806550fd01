package analyze

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
)

// ExplainSchema names and versions the JSON of an Explanation.
const ExplainSchema = "tokperf-explain/1"

// Explanation is tokperf explain's model (METRICS.md "Why two tools
// disagree"): for each figure another tool's file and a tokperf run of the
// same server both report, tokperf's figure, the steps that change it into
// the peer's (each definition the peer uses, recomputed from tokperf's own
// records; workload differences where they can be estimated), the peer's
// figure, and what no named cause explains.
type Explanation struct {
	Schema   string          `json:"schema"`
	Peer     string          `json:"peer"`      // the tool: vllm, sglang, guidellm, aiperf, inference-perf
	PeerName string          `json:"peer_name"` // e.g. "vLLM bench serve"
	PeerFile string          `json:"peer_file"`
	File     string          `json:"file"`
	Level    string          `json:"level"` // the stage compared, e.g. "C=4"
	Figures  []ExplainFigure `json:"figures"`
	// Workload lists what the two runs asked of the server, side by side.
	Workload []WorkloadDiff `json:"workload"`
	// Validity says what may make tokperf's own figures late (client lag).
	Validity []string `json:"validity,omitempty"`
	// Reading is the one line that says what explains most of it.
	Reading string `json:"reading"`
}

// ExplainFigure is one figure, its statistics side by side (mean, p50,
// p99; a rate has one value).
type ExplainFigure struct {
	Figure string `json:"figure"` // TTFT, TPOT, ITL, E2E, output tok/s, requests/s
	Unit   string `json:"unit"`
	// PeerFigure is the peer's own name of the figure set beside it.
	PeerFigure string        `json:"peer_figure"`
	Stats      []string      `json:"stats"`
	Tokperf    []float64     `json:"tokperf"`
	Steps      []ExplainStep `json:"steps"`
	// Recomputed is tokperf's records under the peer's definitions, with
	// the workload estimates added: tokperf plus every step.
	Recomputed  []float64 `json:"recomputed"`
	Peer        []float64 `json:"peer"`
	Unexplained []float64 `json:"unexplained"`
	// Named is the share of the difference the steps name:
	// Σ|step| / (Σ|step| + |unexplained|), 1 when there is none.
	Named []float64 `json:"named_share"`
}

// ExplainStep is one named cause: how much it moves each statistic.
type ExplainStep struct {
	Cause string    `json:"cause"`
	Kind  string    `json:"kind"` // definition, workload
	How   string    `json:"how"`
	Delta []float64 `json:"delta"`
}

// WorkloadDiff is one thing the two runs asked of the server.
type WorkloadDiff struct {
	Name    string `json:"name"`
	Tokperf string `json:"tokperf"`
	Peer    string `json:"peer"`
	// Differs says the two are not the same work: another level, or mean
	// lengths 5% apart.
	Differs bool   `json:"differs"`
	Note    string `json:"note,omitempty"`
}

// The kinds of cause.
const (
	KindDefinition = "definition"
	KindWorkload   = "workload"
)

// MarshalJSON writes a statistic a side does not have as null.
func (f ExplainFigure) MarshalJSON() ([]byte, error) {
	type plain ExplainFigure
	return json.Marshal(struct {
		plain
		Tokperf     []*float64 `json:"tokperf"`
		Recomputed  []*float64 `json:"recomputed"`
		Peer        []*float64 `json:"peer"`
		Unexplained []*float64 `json:"unexplained"`
		Named       []*float64 `json:"named_share"`
	}{plain(f), finites(f.Tokperf), finites(f.Recomputed), finites(f.Peer), finites(f.Unexplained), finites(f.Named)})
}

// MarshalJSON writes a delta that does not apply as null.
func (s ExplainStep) MarshalJSON() ([]byte, error) {
	type plain ExplainStep
	return json.Marshal(struct {
		plain
		Delta []*float64 `json:"delta"`
	}{plain(s), finites(s.Delta)})
}

func finites(xs []float64) []*float64 {
	out := make([]*float64, len(xs))
	for i, x := range xs {
		out[i] = finite(x)
	}
	return out
}

// pctMethod is how a tool reads a percentile off its samples.
type pctMethod int

const (
	nearestRank pctMethod = iota // tokperf
	linear                       // numpy: vLLM, SGLang, AIPerf, inference-perf
	// cdf is GuideLLM's: the first value whose cumulative probability,
	// each weight over the total summed in floating point, reaches p.
	// Nearest rank in exact arithmetic, but the sum of n probabilities of
	// 1/n can fall short of 0.5 by a rounding, and the median is then the
	// value one rank above.
	cdf
)

// itlMethod is what a tool calls ITL.
type itlMethod int

const (
	perToken        itlMethod = iota // tokperf: each gap over its chunk's tokens, token-weighted
	perChunk                         // vLLM, SGLang, inference-perf: the chunk gaps, pooled
	perRequest                       // AIPerf: (latency − TTFT)/(n − 1), one a request
	perRequestByGap                  // GuideLLM: (last − first token)/(n − 1), weighted by n − 1
)

// peerDef is how a tool defines the figures, read from its code (cited in
// METRICS.md "Why two tools disagree").
type peerDef struct {
	name string
	// fromConnect: its timer starts before the connection is taken
	// (vLLM's st before session.post; GuideLLM's request_start; AIPerf's
	// request_start_ns), so a new connection's setup is in TTFT and E2E.
	fromConnect bool
	// toDone: its latency ends at the stream's last event or its end
	// (vLLM's most_recent_timestamp, which the usage event moves;
	// GuideLLM's request_end; AIPerf's last response), not the last token.
	toDone bool
	// tpot names its TPOT figure; "" when it has none apart from its ITL.
	tpot string
	// tpotToLast: its TPOT's decode time ends at the last token
	// (inference-perf's last output_token_time), not at E2E's end.
	tpotToLast bool
	itl        itlMethod
	// itlName and the others are the tool's own names of the figures.
	itlName, ttftName, e2eName, tokName, reqName string
	pct                                          pctMethod
	// fromScheduled: its duration starts before the first request is
	// sent (vLLM's benchmark_start_time), not at the first send.
	fromScheduled bool
}

var peerDefs = map[string]peerDef{
	"vllm": {name: "vLLM bench serve", fromConnect: true, toDone: true, tpot: "tpot", itl: perChunk, itlName: "itl",
		ttftName: "ttft", e2eName: "e2el", tokName: "output_throughput", reqName: "request_throughput", pct: linear, fromScheduled: true},
	"sglang": {name: "SGLang bench_serving", fromConnect: true, toDone: true, tpot: "tpot", itl: perChunk, itlName: "itl",
		ttftName: "ttft", e2eName: "e2e_latency", tokName: "output_throughput", reqName: "request_throughput", pct: linear, fromScheduled: true},
	"guidellm": {name: "GuideLLM", fromConnect: true, toDone: true, itl: perRequestByGap, itlName: "inter_token_latency_ms",
		ttftName: "time_to_first_token_ms", e2eName: "request_latency", tokName: "output tokens / measured window", reqName: "requests / measured window", pct: cdf},
	"aiperf": {name: "AIPerf", fromConnect: true, toDone: true, itl: perRequest, itlName: "inter_token_latency",
		ttftName: "time_to_first_token", e2eName: "request_latency", tokName: "output_token_throughput", reqName: "request_throughput", pct: linear},
	"inference-perf": {name: "inference-perf", fromConnect: true, toDone: true, tpot: "time_per_output_token", tpotToLast: true, itl: perChunk,
		itlName: "inter_token_latency", ttftName: "time_to_first_token", e2eName: "request_latency", tokName: "output_tokens_per_sec",
		reqName: "requests_per_sec", pct: linear},
}

// defs is one set of definitions, flipped from tokperf's to a peer's one
// choice at a time.
type defs struct {
	fromConnect, toDone, perN1 bool
	itl                        itlMethod
	pct                        pctMethod
	fromScheduled              bool
}

// Explain sets the stage at index stage of peer (another tool's run, its
// figures as its file states them) beside tokperf's measured records of
// the same level, from the file named file.
func Explain(peer *Run, stage int, recs []record.Record, file string) (*Explanation, error) {
	if peer.Source == nil {
		return nil, fmt.Errorf("%s is a tokperf result file: explain sets another tool's file beside tokperf's", peer.File)
	}
	def, ok := peerDefs[peer.Source.Tool]
	if !ok {
		return nil, fmt.Errorf("%s: explain knows no definitions of %s", peer.File, peer.Source.Tool)
	}
	if stage < 0 || stage >= len(peer.Stages) {
		return nil, fmt.Errorf("%s has %d stage(s), not %d", peer.File, len(peer.Stages), stage+1)
	}
	good := okRecords(recs)
	if len(good) == 0 {
		return nil, fmt.Errorf("%s: no measured request of that level finished ok", file)
	}
	ps := peer.Stages[stage]
	e := &Explanation{Schema: ExplainSchema, Peer: peer.Source.Tool, PeerName: def.name, PeerFile: peer.File, File: file,
		Level: levelOf(good[0])}
	ex := explainer{recs: good, all: recs, def: def}
	e.Figures = ex.figures(ps, peer.Source)
	e.Workload = workloadDiffs(ps, peer.Source, recs, good)
	ex.lengthStep(e.Figures, ps, peer.Source)
	for i := range e.Figures {
		e.Figures[i].settle()
	}
	e.Validity = validity(recs)
	e.Reading = reading(e)
	return e, nil
}

func okRecords(recs []record.Record) []record.Record {
	var out []record.Record
	for _, r := range recs {
		if r.OK() && !r.Warmup && len(r.Chunks) > 0 {
			out = append(out, r)
		}
	}
	return out
}

func levelOf(r record.Record) string {
	if r.Rate > 0 {
		return fmt.Sprintf("rate %g/s", r.Rate)
	}
	return fmt.Sprintf("C=%d", r.Concurrency)
}

// explainer recomputes figures from tokperf's records under a changing
// set of definitions.
type explainer struct {
	recs []record.Record // ok, measured, with a token
	all  []record.Record // every measured request of the level
	def  peerDef
}

// change is one definition flipped to the peer's.
type change struct {
	cause, how string
	flip       func(*defs)
}

// figures builds each figure tokperf and the peer both have, its steps
// the changes that move it.
func (x explainer) figures(ps Stage, src *Source) []ExplainFigure {
	d := x.def
	pct := change{"percentile method", pctHow[d.pct], func(f *defs) { f.pct = d.pct }}
	anchor := change{"TTFT anchor", "from sent (the request written) → from before the connection is taken: a new connection's setup counts", func(f *defs) { f.fromConnect = d.fromConnect }}
	ending := change{"end of a request", "last token → the stream's last event or end (the usage event, [DONE])", func(f *defs) { f.toDone = d.toDone }}
	n1 := change{"TPOT formula", "decode time / (n − tokens of the first chunk) → (E2E − TTFT) / (n − 1)", func(f *defs) { f.perN1 = true }}
	window := change{"throughput window", windowHow(d), func(f *defs) { f.fromScheduled, f.fromConnect = d.fromScheduled, d.fromConnect }}
	itl := change{"ITL definition", itlHow[d.itl], func(f *defs) { f.itl = d.itl }}
	ttft := func(r *record.Record, f defs) (float64, bool) { return record.Ms(r.FirstToken - start(r, f)), true }
	e2e := func(r *record.Record, f defs) (float64, bool) { return record.Ms(end(r, f) - start(r, f)), true }
	var out []ExplainFigure
	add := func(name, peerName string, dist stats.Dist, steps []change, each func(*record.Record, defs) (float64, bool)) {
		if dist.N == 0 {
			return
		}
		out = append(out, x.dist(name, peerName, dist, steps, each))
	}
	add("TTFT", d.ttftName, ps.TTFT, []change{anchor, pct}, ttft)
	if d.tpot != "" {
		tpot := []change{ending, n1, pct}
		if d.tpotToLast {
			n1.how = "decode time / (n − tokens of the first chunk) → (last token − first token) / (n − 1)"
			tpot = []change{n1, pct}
		}
		add("TPOT", d.tpot, ps.TPOT, tpot, tpotOf)
		add("ITL", d.itlName, ps.ICL, []change{itl, pct}, nil)
	} else {
		add("ITL", d.itlName, ps.TPOT, []change{itl, ending, pct}, nil)
	}
	add("E2E", d.e2eName, ps.E2E, []change{anchor, ending, pct}, e2e)
	if src.Has("aggregate_tok_s") {
		out = append(out, x.rate("output tok/s", d.tokName, "tok/s", ps.AggregateTokS, window, true))
	}
	if src.Has("requests_per_s") {
		out = append(out, x.rate("requests/s", d.reqName, "req/s", ps.RequestsPerS, window, false))
	}
	return out
}

func windowHow(d peerDef) string {
	if d.fromScheduled {
		return "first sent → last done, from when the first request was due (its clock starts before any is sent)"
	}
	return "first sent → last done, from the first request's start, its connection included"
}

var pctHow = map[pctMethod]string{
	nearestRank: "nearest rank, as tokperf",
	linear:      "nearest rank → linear interpolation between ranks (numpy's np.percentile)",
	cdf:         "nearest rank → the first value whose cumulative probability, summed in floating point, reaches p (GuideLLM's CDF: a rank higher where the sum rounds short)",
}

var itlHow = map[itlMethod]string{
	perToken:        "per token, as tokperf",
	perChunk:        "each gap over its chunk's tokens, token-weighted → the chunk gaps themselves, pooled (a chunk of k tokens counts once, k times as long)",
	perRequest:      "each gap over its chunk's tokens, token-weighted → one per request, (E2E − TTFT) / (n − 1)",
	perRequestByGap: "each gap over its chunk's tokens, token-weighted → one per request, (last − first token) / (n − 1), weighted by n − 1",
}

func start(r *record.Record, f defs) time.Duration {
	if f.fromConnect {
		return r.Sent - r.Connect
	}
	return r.Sent
}

func end(r *record.Record, f defs) time.Duration {
	if f.toDone && r.Done > r.LastToken {
		return r.Done
	}
	return r.LastToken
}

// tpotOf is a request's TPOT: tokperf's decode time over decode tokens,
// or with perN1 the peers' (E2E − TTFT) / (n − 1), E2E ending where f says.
func tpotOf(r *record.Record, f defs) (float64, bool) {
	dt := end(r, f) - r.FirstToken
	n := r.OutputTokens - r.FirstChunkTokens()
	if f.perN1 {
		n = r.OutputTokens - 1
	}
	if dt <= 0 || n <= 0 {
		return 0, false
	}
	return record.Ms(dt) / float64(n), true
}

// dist is a request-weighted figure (or ITL, when each is nil) under
// tokperf's definitions, then after each change in turn.
func (x explainer) dist(name, peerName string, peer stats.Dist, steps []change, each func(*record.Record, defs) (float64, bool)) ExplainFigure {
	f := ExplainFigure{Figure: name, Unit: "ms", PeerFigure: peerName, Stats: []string{"mean", "p50", "p99"},
		Peer: []float64{peer.Mean, peer.P50, peer.P99}}
	var cur defs
	value := func() []float64 {
		if each == nil {
			return x.itl(cur)
		}
		var xs []float64
		for i := range x.recs {
			if v, ok := each(&x.recs[i], cur); ok {
				xs = append(xs, v)
			}
		}
		return summarize(xs, nil, cur.pct)
	}
	f.Tokperf = value()
	prev := f.Tokperf
	for _, c := range steps {
		c.flip(&cur)
		now := value()
		f.Steps = append(f.Steps, ExplainStep{Cause: c.cause, Kind: KindDefinition, How: c.how, Delta: minus(now, prev)})
		prev = now
	}
	f.Recomputed = prev
	return f
}

// itl is the ITL sample under f, summarized: per token weighted by its
// tokens (tokperf), per chunk gap, or one per request.
func (x explainer) itl(f defs) []float64 {
	var xs, ws []float64
	for i := range x.recs {
		r := &x.recs[i]
		switch f.itl {
		case perToken, perChunk:
			for j := 1; j < len(r.Chunks); j++ {
				gap := record.Ms(r.Chunks[j].At - r.Chunks[j-1].At)
				if f.itl == perChunk {
					xs, ws = append(xs, gap), append(ws, 1)
					continue
				}
				k := float64(r.Chunks[j].Tokens)
				xs, ws = append(xs, gap/k), append(ws, k)
			}
		case perRequest, perRequestByGap:
			if r.OutputTokens < 2 {
				continue
			}
			to, w := end(r, f), 1.0
			if f.itl == perRequestByGap {
				to, w = r.LastToken, float64(r.OutputTokens-1)
			}
			xs, ws = append(xs, record.Ms(to-r.FirstToken)/float64(r.OutputTokens-1)), append(ws, w)
		}
	}
	return summarize(xs, ws, f.pct)
}

// summarize is mean, p50 and p99 of xs, each counted ws times (nil: once).
// Nearest rank reads the weighted CDF's first value at p, as tokperf's
// token-weighted ITL and GuideLLM's distributions do; linear interpolation
// is numpy's, over the sample expanded by integer weights.
func summarize(xs, ws []float64, m pctMethod) []float64 {
	if len(xs) == 0 {
		return []float64{math.NaN(), math.NaN(), math.NaN()}
	}
	if ws == nil {
		ws = make([]float64, len(xs))
		for i := range ws {
			ws[i] = 1
		}
	}
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmpFloat(xs[a], xs[b]) })
	sum, total := 0.0, 0.0
	for i := range xs {
		sum += xs[i] * ws[i]
		total += ws[i]
	}
	out := []float64{sum / total, 0, 0}
	for k, p := range []float64{50, 99} {
		out[k+1] = percentile(xs, ws, idx, total, p, m)
	}
	return out
}

// percentile is percentile p of xs, each counted ws times, idx its
// order, total the sum of ws, by method m.
func percentile(xs, ws []float64, idx []int, total, p float64, m pctMethod) float64 {
	switch m {
	case linear:
		return linearWeighted(xs, ws, idx, total, p)
	case cdf:
		c := 0.0
		for _, i := range idx {
			if c += ws[i] / total; c >= p/100 {
				return xs[i]
			}
		}
	default:
		c := 0.0
		for _, i := range idx {
			if c += ws[i]; c >= math.Ceil(p/100*total-1e-9) {
				return xs[i]
			}
		}
	}
	return xs[idx[len(idx)-1]]
}

// linearWeighted is numpy's linear percentile of the sample in which each
// xs[i] appears ws[i] times (integer weights), without expanding it.
func linearWeighted(xs, ws []float64, idx []int, total, p float64) float64 {
	at := p / 100 * (total - 1)
	lo := math.Floor(at)
	nth := func(k float64) float64 { // the k-th value (0-based) of the expanded sample
		c := 0.0
		for _, i := range idx {
			if c += ws[i]; k < c {
				return xs[i]
			}
		}
		return xs[idx[len(idx)-1]]
	}
	a := nth(lo)
	if lo+1 > total-1 {
		return a
	}
	return a + (at-lo)*(nth(lo+1)-a)
}

func minus(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = a[i] - b[i]
	}
	return out
}

// rate is output tok/s or requests/s over the level's window: tokperf's
// from the first sent, the peer's from where its clock starts.
func (x explainer) rate(name, peerName, unit string, peer float64, window change, tokens bool) ExplainFigure {
	f := ExplainFigure{Figure: name, Unit: unit, PeerFigure: peerName, Stats: []string{"value"}, Peer: []float64{peer}}
	var cur defs
	value := func() []float64 {
		from, to := time.Duration(math.MaxInt64), time.Duration(0)
		for i := range x.all {
			r := &x.all[i]
			if r.Warmup {
				continue
			}
			s := r.Sent
			if cur.fromScheduled {
				s = min(r.Scheduled, r.Sent-r.Connect)
			} else if cur.fromConnect {
				s = r.Sent - r.Connect
			}
			from, to = min(from, s), max(to, r.Done)
		}
		n := 0.0
		for i := range x.recs {
			if tokens {
				n += float64(x.recs[i].OutputTokens)
			} else {
				n++
			}
		}
		if to <= from {
			return []float64{math.NaN()}
		}
		return []float64{n / (to - from).Seconds()}
	}
	f.Tokperf = value()
	window.flip(&cur)
	now := value()
	f.Steps = []ExplainStep{{Cause: window.cause, Kind: KindDefinition, How: window.how, Delta: minus(now, f.Tokperf)}}
	f.Recomputed = now
	return f
}

// settle adds up the steps: what is recomputed, what remains unexplained
// and the share named.
func (f *ExplainFigure) settle() {
	n := len(f.Stats)
	f.Recomputed, f.Unexplained, f.Named = make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		// A difference under a millionth of the figure is the files'
		// rounding (times kept to the ns or µs), not a cause.
		tiny := 1e-6 * math.Abs(f.Tokperf[i])
		v, named := f.Tokperf[i], 0.0
		for j, s := range f.Steps {
			d := s.Delta[i]
			if math.Abs(d) < tiny {
				d, f.Steps[j].Delta[i] = 0, 0
			}
			if !math.IsNaN(d) {
				v += d
				named += math.Abs(d)
			}
		}
		f.Recomputed[i] = v
		f.Unexplained[i] = f.Peer[i] - v
		if math.Abs(f.Unexplained[i]) < tiny {
			f.Unexplained[i] = 0
		}
		u := math.Abs(f.Unexplained[i])
		switch {
		case math.IsNaN(u):
			f.Named[i] = math.NaN()
		case named+u == 0:
			f.Named[i] = 1
		default:
			f.Named[i] = named / (named + u)
		}
	}
}

// Unexplained is the largest share of a figure no cause names, over the
// figures and statistics: |unexplained| / |the peer's figure|.
func (e *Explanation) Unexplained() float64 {
	worst := 0.0
	for _, f := range e.Figures {
		for i, u := range f.Unexplained {
			if p := math.Abs(f.Peer[i]); p > 0 && !math.IsNaN(u) {
				worst = max(worst, math.Abs(u)/p)
			}
		}
	}
	return worst
}

// reading is the one line: what moves the figures most, summed over
// every figure and statistic relative to tokperf's figure: a named cause,
// or what none names (then the workload differences the files show are
// its likely cause), and the most any figure leaves unexplained.
func reading(e *Explanation) string {
	type cause struct{ kind, cause, how string }
	score := map[cause]float64{}
	var order []cause
	left := 0.0
	for _, f := range e.Figures {
		for i, u := range f.Unexplained {
			if t := math.Abs(f.Tokperf[i]); t > 0 && !math.IsNaN(u) {
				left += math.Abs(u) / t
			}
		}
		for _, s := range f.Steps {
			key := cause{s.Kind, s.Cause, s.How}
			if _, ok := score[key]; !ok {
				order = append(order, key)
			}
			for i, d := range s.Delta {
				if t := math.Abs(f.Tokperf[i]); t > 0 && !math.IsNaN(d) {
					score[key] += math.Abs(d) / t
				}
			}
		}
	}
	var best *cause
	for i, k := range order {
		if score[k] > 0.001 && (best == nil || score[k] > score[*best]) {
			best = &order[i]
		}
	}
	tail := fmt.Sprintf("unexplained at most %.1f%% of any of %s's figures", 100*e.Unexplained(), e.PeerName)
	var differ []string
	for _, w := range e.Workload {
		if w.Differs {
			differ = append(differ, fmt.Sprintf("%s %s against %s", w.Name, w.Tokperf, w.Peer))
		}
	}
	switch {
	case best != nil && score[*best] >= left:
		return fmt.Sprintf("Most of the difference is %s, the %s (%s); %s.", best.kind, best.cause, best.how, tail)
	case left > 0.001 && len(differ) > 0:
		return fmt.Sprintf("Most of the difference no definition explains (%s): the runs asked the server for different work: %s.", tail, strings.Join(differ, "; "))
	case left > 0.001:
		return fmt.Sprintf("Most of the difference no definition explains (%s), and the files show no difference of workload: the two runs measured the server in different states, or one client lagged.", tail)
	}
	return "No cause moves a figure by 0.1%: the two tools define these alike; " + tail + "."
}
