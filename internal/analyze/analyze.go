// Package analyze holds the models of tokperf's results and says what the
// figures mean. A Run (setup, stages with the server's and the GPUs'
// readings, warnings, verdict) is built by one Fold from records, live or
// from a file; Comparison, BaselineComparison and Overhead set runs side by
// side. Every judgement carries its numbers: the warnings of
// docs/METRICS.md §5, the verdict on scaling, fairness, significance.
//
//	f := analyze.NewFold(setup, "run.jsonl")
//	for each record { f.Add(&rec) }
//	run := f.Run() // run.Stages, run.Warnings, run.Verdict
package analyze

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/summary"
)

// PromptCountLimit is how far the server's prompt count may differ from
// the client tokenizer's before it is reported (METRICS.md §5).
const PromptCountLimit = 0.02

// CacheSlackTokens is how many prompt tokens per request a prefix cache
// may serve on a workload meant to be uncached before it is reported: the
// BOS token and the first block around it are shared by every prompt.
const CacheSlackTokens = 16

// cacheLimit is the share of prompt tokens beyond what is shared by
// construction that a prefix cache may serve before it is reported: a chat
// template's fixed opening is shared too, and is unknown to the client.
func (c Asked) cacheLimit() float64 {
	if c.Chat {
		return 0.10
	}
	return 0.01
}

// sharedShare is the share of a stage's prompt tokens a prefix cache may
// serve by construction: the shared prefix asked for and the first block
// of every prompt. ok is false when it cannot be told (a shared prefix,
// but no prompt counts to set it against).
func (c Asked) sharedShare(s summary.Stage) (float64, bool) {
	prompt := s.PromptTokens
	if prompt == 0 {
		prompt = s.AskedPrompt
	}
	if s.OK == 0 || prompt == 0 {
		return 0, c.SharedPrefix == 0
	}
	return min(1, float64(s.OK*(c.SharedPrefix+CacheSlackTokens))/float64(prompt)), true
}

// Asked is what the run asked for, to judge what it got.
type Asked struct {
	SharedPrefix int  // tokens every prompt shares on purpose
	Reuse        bool // prompts share prefixes on purpose (a trace, groups, conversations)
	Thinking     bool // conversations with a think time, agent sessions: slots idle between turns by design
	Chat         bool // the chat API: a template wraps every prompt
	OutputTokens int  // requested of every request; 0 when they differ (a dataset, a distribution)
	IgnoreEOS    bool // asked the server to ignore EOS
	Engine       string
	OpenLoop     bool
	Simulated    bool // the embedded simulator shared the client's CPUs
}

// Warning is one check that failed, for one stage or for the run.
type Warning struct {
	Stage string `json:"stage,omitempty"` // "C=32", or empty for the run
	Check string `json:"check"`           // token_source, short_output, client_lag, ...
	Text  string `json:"text"`
}

func (w Warning) String() string {
	if w.Stage == "" {
		return w.Text
	}
	return w.Stage + ": " + w.Text
}

// Label names a stage the way the table does.
func Label(s summary.Stage) string {
	l := fmt.Sprintf("C=%d", s.Concurrency)
	if s.Rate > 0 {
		l = fmt.Sprintf("rate=%g/s", s.Rate)
	}
	if s.Rate == 0 && s.Concurrency == 0 {
		l = "C=?" // another tool's file that states no load
	}
	if s.Repeat > 0 {
		l += fmt.Sprintf(" #%d", s.Repeat+1)
	}
	return l
}

// BufferedLimit is the share of chunks found already buffered above which
// the client is called late.
const BufferedLimit = 0.10

// LateMin and LateShareLimit are how many of an open loop's sends, and
// what share of them, must be late before the client is called late: a
// send or two behind schedule is a busy moment of the machine, not a
// client that cannot keep up.
const (
	LateMin        = 3
	LateShareLimit = 0.01
)

// LateSends reports whether an open-loop stage's late sends pass both
// LateMin and LateShareLimit.
func LateSends(s summary.Stage) bool {
	return s.Late >= LateMin && float64(s.Late) > LateShareLimit*float64(s.Requests)
}

// ClientWaitLimit is the share of a closed loop's slot time spent waiting
// on the client above which the client is called a bottleneck: below it
// the load it lost is too small to matter.
const ClientWaitLimit = 0.01

// TakesIgnoreEOS reports whether an engine has ignore_eos at all: TGI
// and Ollama have none, so asking for it changes nothing there.
func TakesIgnoreEOS(name string) bool {
	e, _ := engine.Lookup(name)
	return !e.NoIgnoreEOS
}

// shortOutput says why a stage's outputs fell short of what was asked,
// from the engine and the finish reasons the server gave: only requests
// that stopped early on a server that takes ignore_eos disobeyed it.
func shortOutput(s summary.Stage, c Asked) string {
	short := fmt.Sprintf("mean output %.0f tokens is %.0f%% of the %d asked", s.MeanOutputTokens, 100*s.MeanOutputTokens/float64(c.OutputTokens), c.OutputTokens)
	switch {
	case !TakesIgnoreEOS(c.Engine):
		return fmt.Sprintf("%s: %s has no ignore_eos, so outputs end at the model's EOS as usual (%d of %s stopped before the limit); per-request figures cover shorter outputs than asked", short, c.Engine, s.EarlyFinished, record.Plural(s.OK, "request"))
	case s.LengthFinished == s.OK:
		return fmt.Sprintf("%s, though every request ended at its token limit (finish reason length): the server's own limit is lower than asked (its context length or a max-tokens cap) or its counts are short", short)
	case s.EarlyFinished > 0:
		return fmt.Sprintf("%s: %d of %s stopped before the limit (finish reason not length): the server did not honour ignore_eos, so per-request figures cover shorter outputs", short, s.EarlyFinished, record.Plural(s.OK, "request"))
	}
	return fmt.Sprintf("%s and the server gave no finish reasons: it likely did not honour ignore_eos, so per-request figures cover shorter outputs", short)
}

func warning(s summary.Stage, check, format string, args ...any) Warning {
	return Warning{Stage: Label(s), Check: check, Text: fmt.Sprintf(format, args...)}
}

// Warnings runs the checks on each stage.
func Warnings(stages []summary.Stage, c Asked) []Warning {
	var out []Warning
	for _, s := range stages {
		add := func(check, format string, args ...any) { out = append(out, warning(s, check, format, args...)) }
		if s.Requests == 0 {
			add("empty", "no measured request finished")
			continue
		}
		for _, check := range stageChecks {
			check(s, c, add)
		}
	}
	return out
}

// warn adds one warning of a check to the stage's.
type warn func(check, format string, args ...any)

// stageChecks are the checks of a stage where a request finished, in the
// order their warnings are shown.
var stageChecks = []func(summary.Stage, Asked, warn){failureWarnings, tokenWarnings, promptWarnings, contentWarnings, clientWarnings, loadWarnings}

// failureWarnings are the requests that failed or were cancelled.
func failureWarnings(s summary.Stage, _ Asked, add warn) {
	if n := errorsOf(s); n > 0 {
		add("errors", "%d of %s failed (%s); figures use the %d that finished ok; %s", n, record.Plural(s.Requests, "request"), errorList(s), s.OK, firstErrors(s))
	}
	if s.Cancelled > 0 {
		add("cancelled", "%s%s cancelled by the interrupt and left out", record.Plural(s.Cancelled, "request"), record.WereWas(s.Cancelled))
	}
}

// tokenWarnings are the token counts the server did not send, and
// outputs shorter than asked.
func tokenWarnings(s summary.Stage, c Asked, add warn) {
	estimated := s.OutputSources[record.SourceChunks] + s.OutputSources[record.SourceNone]
	if n := estimated; n > 0 {
		add("token_source", "output tokens of %d of %s are estimated as one per chunk: the server sent no usage", n, record.Plural(s.OK, "request"))
	} else if n := s.ChunkSources[record.SourceChunks]; n > 0 && math.Abs(s.TokensPerChunk-1) > 0.02 {
		add("token_source", "tokens per chunk are unknown for %s (no per-chunk counts) and assumed 1, but the server's totals give %.2f per chunk: ITL is per chunk there", record.Plural(n, "request"), s.TokensPerChunk)
	}
	if n := s.PromptSent; n > 0 {
		how := "as its tokenizer counted them"
		if s.PromptEstimated > 0 {
			how = "estimated from the text where no tokenizer was given"
		}
		add("prompt_source", "the server sent no prompt count for %d of %s: their prompt tokens, and input tok/s, are what tokperf sent, %s", n, record.Plural(s.OK, "request"), how)
	}
	if c.IgnoreEOS && c.OutputTokens > 0 && s.OK > 0 && s.MeanOutputTokens < 0.9*float64(c.OutputTokens) {
		if estimated > 0 {
			// An estimate cannot accuse the server: several tokens per
			// chunk read as one each look like a short output.
			add("short_output", "mean output %.0f tokens is %.0f%% of the %d asked by an estimate of one token per chunk (the server sent no counts): if its chunks hold several tokens the outputs are not short; only counts from the server or a tokenizer can tell", s.MeanOutputTokens, 100*s.MeanOutputTokens/float64(c.OutputTokens), c.OutputTokens)
		} else {
			add("short_output", "%s", shortOutput(s, c))
		}
	}
}

// promptWarnings are prompt counts that disagree with the tokenizer's and
// prompts the prefix cache served more of than they share.
func promptWarnings(s summary.Stage, c Asked, add warn) {
	if n := s.PromptCompared; n > 0 && s.AskedPrompt > 0 {
		d := float64(s.ServerPrompt)/float64(s.AskedPrompt) - 1
		switch {
		case c.Chat && s.ServerPrompt >= s.AskedPrompt:
			add("chat_template", "the chat template added %.1f prompt tokens per request (the server counted %d, the tokenizer %d over %s): TTFT covers them", float64(s.ServerPrompt-s.AskedPrompt)/float64(n), s.ServerPrompt, s.AskedPrompt, record.Plural(n, "request"))
		case math.Abs(d) > PromptCountLimit:
			add("prompt_tokens", "the server counted %d prompt tokens where the tokenizer counted %d (%+.1f%% over %s): the tokenizer is not the served model's, or the server adds tokens (a BOS, a template)", s.ServerPrompt, s.AskedPrompt, 100*d, record.Plural(n, "request"))
		}
	}
	// Some reuse is there by construction: the shared prefix asked for,
	// and a block's worth at the start of every prompt (the BOS token,
	// a chat template's fixed opening); only more than that is the
	// cache flattering TTFT.
	expected := s.OK * (c.SharedPrefix + CacheSlackTokens)
	if !c.Reuse && s.PromptTokens > 0 && float64(s.CachedTokens-expected) > c.cacheLimit()*float64(s.PromptTokens) {
		add("prefix_cache", "the server reports %d of %d prompt tokens (%.0f%%) served from its prefix cache, more than the %d per request the prompts share by construction: TTFT is flattered; give each run prompts of its own (the default without --seed)", s.CachedTokens, s.PromptTokens, 100*float64(s.CachedTokens)/float64(s.PromptTokens), c.SharedPrefix+CacheSlackTokens)
	}
}

// contentWarnings are outputs that were mostly or only reasoning.
func contentWarnings(s summary.Stage, _ Asked, add warn) {
	if s.OutputTokens > 0 && 2*s.ReasoningTokens > s.OutputTokens {
		add("reasoning", "%d of %d output tokens (%.0f%%) were reasoning, more than half: decode tok/s counts them, but a reader sees content only after TTFO (p50 %.1f ms against TTFT %.1f ms)", s.ReasoningTokens, s.OutputTokens, 100*float64(s.ReasoningTokens)/float64(s.OutputTokens), s.TTFO.P50, s.TTFT.P50)
	}
	if s.NoContent > 0 {
		add("no_content", "%d of %s produced tokens but no visible content (reasoning only): their TTFO is undefined; for reasoning, raise the output length", s.NoContent, record.Plural(s.OK, "request"))
	}
}

// clientWarnings are the signs that the client, not the server, held the
// load back.
func clientWarnings(s summary.Stage, c Asked, add warn) {
	shared := ""
	if c.Simulated {
		shared = " (here the embedded simulator shares the client's CPUs)"
	}
	if c.OpenLoop {
		if LateSends(s) {
			add("client_lag", "%d of %s (%.1f%%) were sent more than %.2f ms behind schedule (1 ms past this machine's timer oversleep; client queue p99 %.1f ms): the client, not the server, may be the bottleneck%s, or the concurrency cap was reached", s.Late, record.Plural(s.Requests, "request"), 100*float64(s.Late)/float64(s.Requests), max(s.LateMs, 1), s.ClientQueue.P99, shared)
		}
	} else if q := s.ClientWait; q.N > 0 && s.OK > 0 {
		// In a closed loop a slot waiting on the client carries no
		// request: the load falls by that share, which says whether the
		// wait matters (a few ms before an 8-second request do not).
		// Opening connections is left out: it is the network's, and
		// counted in the record's connect time.
		if share := q.Mean / (q.Mean + s.E2E.Mean); share > ClientWaitLimit {
			add("client_lag", "the client made requests wait %.2f%% of the slots' time (mean %.2f ms, p99 %.1f ms, connection setup excluded), so the load fell by that share: the client, not the server, may be the bottleneck%s; TTFT starts when the request is sent, so it excludes this wait", 100*share, q.Mean, q.P99, shared)
		}
	}
	if s.BufferedShare > BufferedLimit {
		add("client_lag", "%.0f%% of token chunks were already waiting in the client's buffer when it read them: the client, not the server, may be the bottleneck%s; chunks read together share one arrival time", 100*s.BufferedShare, shared)
	}
}

// loadWarnings are loads that fell short of the target, and aggregates
// that ramp-up and drain moved off the steady state.
func loadWarnings(s summary.Stage, c Asked, add warn) {
	// A stage with no request finished has no concurrency to speak of:
	// the errors warning says what happened. An open loop's -c is a
	// cap its arrivals need not reach, not a target.
	if s.OK > 0 && s.Concurrency > 0 && s.Rate == 0 && !c.OpenLoop && s.EffectiveConcurrency < 0.9*float64(s.Concurrency) && !c.Thinking {
		add("effective_concurrency", "effective concurrency %.1f is %.0f%% of the target %d (the server caps running requests, requests fail fast, or the stage is too short for its ramp and drain)", s.EffectiveConcurrency, 100*s.EffectiveConcurrency/float64(s.Concurrency), s.Concurrency)
	}
	// Conversations that think and agent sessions that wait on tools
	// leave slots idle by design: the moments with every slot in flight
	// are not their steady state, so the window's distance from it is
	// no drain.
	if s.SteadyTokS > 0 && !c.Thinking {
		if d := s.AggregateTokS/s.SteadyTokS - 1; math.Abs(d) > 0.10 {
			add("drain_tail", "aggregate %.1f tok/s is %+.0f%% off the steady state %.1f tok/s: ramp-up and the drain of the last requests weigh on the window; more requests per level shrink it", s.AggregateTokS, 100*d, s.SteadyTokS)
		}
	}
}

func errorsOf(s summary.Stage) int {
	n := 0
	for _, v := range s.Errors {
		n += v
	}
	return n
}

func errorList(s summary.Stage) string {
	var parts []string
	for k, v := range s.Errors {
		p := fmt.Sprintf("%d %s", v, k)
		if k == record.StatusHTTPError && len(s.HTTPCodes) > 0 {
			var codes []string
			for c, n := range s.HTTPCodes {
				codes = append(codes, fmt.Sprintf("%d × %d", n, c))
			}
			sort.Strings(codes)
			p += " (HTTP " + strings.Join(codes, ", ") + ")"
		}
		parts = append(parts, p)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// firstErrors quotes the first message of each failed status.
func firstErrors(s summary.Stage) string {
	var parts []string
	for k, msg := range s.FirstError {
		parts = append(parts, fmt.Sprintf("the first %s: %s", k, msg))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "the file holds each error"
	}
	return strings.Join(parts, "; ")
}

// ScalingVerdict judges how throughput scales across concurrency levels,
// from the last two levels, with the numbers it rests on.
type ScalingVerdict struct {
	Kind string `json:"kind"` // rising, saturated, past_peak, single, none, not_judged
	Text string `json:"text"`
	// Basis names the stages the verdict read and, when one of them was
	// not measured validly, why it is withheld: Kind is then not_judged,
	// Text "not judged: …", and Change, PerDoubling, Peak and Knee are 0.
	Basis *Basis `json:"basis,omitempty"`
	// From and To are the last two levels; Change is To's aggregate over
	// From's − 1, and PerDoubling that growth per doubling of concurrency.
	From        int     `json:"from,omitempty"`
	To          int     `json:"to,omitempty"`
	Change      float64 `json:"change,omitempty"`
	PerDoubling float64 `json:"per_doubling,omitempty"`
	// Peak is the level of the highest aggregate tok/s.
	Peak int `json:"peak,omitempty"`
	// Knee is where a two-segment fit of aggregate tok/s against C (on log
	// scales) bends (0 when there are too few levels or no bend): where
	// scaling slows, not where it stops.
	Knee int `json:"knee,omitempty"`
	// Saturated is the level past which no doubling of concurrency gained
	// Saturation (or the server's cap, Cap); 0 unless the kind is
	// saturated.
	Saturated int  `json:"saturated_at,omitempty"`
	Cap       *Cap `json:"cap,omitempty"`
	// Noise is the relative standard error of the ratio of the peak's
	// aggregate to the last level's, from their time blocks: a peak must
	// beat it (0: not measured).
	Noise float64 `json:"noise,omitempty"`
	// Steps describes each step between levels: throughput gain against
	// concurrency gain, and what it cost each request.
	Steps []Step `json:"steps,omitempty"`
}

// Step is one step between two concurrency levels.
type Step struct {
	From int `json:"from"`
	To   int `json:"to"`
	// TokSGain is To's aggregate over From's; ConcGain the concurrency's.
	TokSGain float64 `json:"tok_s_gain"`
	ConcGain float64 `json:"concurrency_gain"`
	// Efficiency is (TokSGain − 1) / (ConcGain − 1): 1 is linear scaling.
	Efficiency float64 `json:"efficiency"`
	// DecodeChange is the change of per-request decode tok/s (−0.3: −30%).
	DecodeChange float64 `json:"decode_change"`
	Text         string  `json:"text"`
	// Withheld, when set, is why the step states no finding: one of its
	// levels was not measured validly, or it scaled above linear.
	Withheld string `json:"withheld,omitempty"`
}

// Saturation is the growth per doubling of concurrency below which
// throughput counts as flat.
const Saturation = 0.10

// closedLevels are the closed-loop stages with finished requests, by concurrency.
func closedLevels(stages []summary.Stage) []summary.Stage {
	var levels []summary.Stage
	for _, s := range stages {
		if s.Rate == 0 && s.Concurrency > 0 && s.OK > 0 {
			levels = append(levels, s)
		}
	}
	sort.Slice(levels, func(i, j int) bool { return levels[i].Concurrency < levels[j].Concurrency })
	return levels
}

// PerDoubling is the growth of aggregate throughput per doubling of
// concurrency between two levels.
func PerDoubling(a, b summary.Stage) float64 {
	return math.Pow(b.AggregateTokS/a.AggregateTokS, 1/math.Log2(float64(b.Concurrency)/float64(a.Concurrency))) - 1
}

// Scaling judges how throughput scales: from the last two levels (still
// rising, saturated, or past the peak), with the knee of the curve and
// each step's efficiency, always with the numbers.
func Scaling(stages []summary.Stage) ScalingVerdict { return ScalingCapped(stages, Cap{}) }

// Cap is a running cap the server stated or showed: it runs at most N
// requests at once, so a level past N only queues.
type Cap struct {
	N    int    `json:"n"`
	From string `json:"from"` // where it was read: "/props total_slots"
}

// ScalingCapped is Scaling for a server with running cap cp (N 0: none
// known): a sweep that reached the cap is saturated there, and no advice
// names a level past it.
func ScalingCapped(stages []summary.Stage, cp Cap) ScalingVerdict {
	levels := closedLevels(stages)
	if len(levels) < 2 {
		if len(stages) >= 2 {
			return ScalingVerdict{Kind: "none", Text: fmt.Sprintf("%d of %d levels finished a request: too few to say how throughput scales", len(levels), len(stages))}
		}
		return ScalingVerdict{Kind: "single", Text: "one concurrency level: sweep several (-c 1,4,16,32) to see how throughput scales"}
	}
	v := ScalingVerdict{Steps: steps(levels), Knee: knee(levels)}
	a, b := levels[len(levels)-2], levels[len(levels)-1]
	v.Change, v.PerDoubling = b.AggregateTokS/a.AggregateTokS-1, PerDoubling(a, b)
	step := fmt.Sprintf("aggregate %+.0f%% from C=%d to C=%d (%.1f → %.1f tok/s, %+.0f%% per doubling)",
		100*v.Change, a.Concurrency, b.Concurrency, a.AggregateTokS, b.AggregateTokS, 100*v.PerDoubling)
	best := levels[0]
	for _, s := range levels {
		if s.AggregateTokS > best.AggregateTokS {
			best = s
		}
	}
	v.From, v.To, v.Peak = a.Concurrency, b.Concurrency, best.Concurrency
	v.Noise = noise(best, b)
	peak := best.Concurrency != b.Concurrency && best.AggregateTokS > b.AggregateTokS*(1+Saturation)
	switch {
	case cp.N > 0 && b.Concurrency >= cp.N:
		v.Kind, v.Saturated, v.Cap = "saturated", cp.N, &cp
		v.Text = fmt.Sprintf("saturated at C=%d, the server's cap: it runs at most %d requests (%s), so a level past it only queues; %s", cp.N, cp.N, cp.From, step)
	case v.PerDoubling >= Saturation:
		v.Kind = "rising"
		v.Text = fmt.Sprintf("not saturated: %s; %s", step, tryNext(b.Concurrency, cp))
	case peak && beats(best, b, v.Noise):
		v.Kind = "past_peak"
		v.Text = fmt.Sprintf("over-saturated: %s; the peak was C=%d (%.1f tok/s, %+.0f%% above C=%d%s)", step, best.Concurrency, best.AggregateTokS, 100*(best.AggregateTokS/b.AggregateTokS-1), b.Concurrency, noiseText(v.Noise, "beyond"))
	default:
		v.Kind = "saturated"
		v.Text = saturatedText(&v, levels, step)
		if peak {
			v.Text += fmt.Sprintf("; C=%d read %+.0f%% above C=%d, within the noise between the levels%s: not a peak", best.Concurrency, 100*(best.AggregateTokS/b.AggregateTokS-1), b.Concurrency, noiseText(v.Noise, "of"))
		}
	}
	if v.Knee > 0 {
		v.Text += fmt.Sprintf("; the curve bends at C≈%d", v.Knee)
	}
	return v
}

// steps describes each step between levels.
func steps(levels []summary.Stage) []Step {
	var out []Step
	for i := 1; i < len(levels); i++ {
		a, b := levels[i-1], levels[i]
		cg, tg := float64(b.Concurrency)/float64(a.Concurrency), b.AggregateTokS/a.AggregateTokS
		st := Step{From: a.Concurrency, To: b.Concurrency, TokSGain: tg, ConcGain: cg, Efficiency: (tg - 1) / (cg - 1), DecodeChange: b.DecodeTokS.Mean/a.DecodeTokS.Mean - 1}
		st.Text = fmt.Sprintf("C=%d→%d: %.2f× tok/s for %.2g× concurrency (%s efficient), decode tok/s per request %s",
			a.Concurrency, b.Concurrency, tg, cg, pct(100*st.Efficiency, false), pct(100*st.DecodeChange, true))
		out = append(out, st)
	}
	return out
}

// tryNext is the advice of a rising verdict: the levels 1.5× and 2× the
// last, none past the server's cap.
func tryNext(c int, cp Cap) string {
	next := []int{c * 3 / 2, c * 2}
	if cp.N > 0 {
		next = []int{min(c*3/2, cp.N), min(c*2, cp.N)}
		if next[0] == next[1] {
			return fmt.Sprintf("try C=%d, the server's cap (%s)", cp.N, cp.From)
		}
	}
	return fmt.Sprintf("try C=%d and C=%d", next[0], next[1])
}

// saturatedText names the level past which no step gained Saturation per
// doubling, and what throughput remained above it.
func saturatedText(v *ScalingVerdict, levels []summary.Stage, step string) string {
	k := len(levels) - 1
	for k > 0 && PerDoubling(levels[k-1], levels[k]) < Saturation {
		k--
	}
	sat := levels[k]
	top := sat
	for _, s := range levels[k:] {
		if s.AggregateTokS > top.AggregateTokS {
			top = s
		}
	}
	v.Saturated = sat.Concurrency
	a, b := levels[len(levels)-2], levels[len(levels)-1]
	moved := fmt.Sprintf("fell %.0f%%", 100*(1-b.DecodeTokS.Mean/a.DecodeTokS.Mean))
	if d := 100 * (1 - b.DecodeTokS.Mean/a.DecodeTokS.Mean); math.Round(d) < 0 {
		moved = fmt.Sprintf("rose %.0f%%", -d)
	}
	remains := "nothing remains above it"
	if top.Concurrency != sat.Concurrency {
		remains = fmt.Sprintf("%+.0f%% remains above it (C=%d, %.1f tok/s)", 100*(top.AggregateTokS/sat.AggregateTokS-1), top.Concurrency, top.AggregateTokS)
	}
	return fmt.Sprintf("saturated at C=%d (each doubling past it gained under %.0f%%; %s): %s while decode tok/s per request %s (%.1f → %.1f)",
		sat.Concurrency, 100*Saturation, remains, step, moved, a.DecodeTokS.Mean, b.DecodeTokS.Mean)
}

// noise is the relative noise of the ratio of two levels' aggregates, from
// their time blocks (summary.Stage.AggregateSpread); 0 when neither has
// blocks to say.
func noise(a, b summary.Stage) float64 {
	return math.Hypot(a.AggregateSpread, b.AggregateSpread)
}

// beats says a's aggregate is above b's by more than the noise between
// them (95%, on the log ratio); with no noise measured, any amount does.
func beats(a, b summary.Stage, noise float64) bool {
	return math.Log(a.AggregateTokS/b.AggregateTokS) > 1.96*noise
}

// noiseText is ", beyond the levels' noise of ±3%" (95%), or "" when
// none was measured.
func noiseText(noise float64, word string) string {
	if !(noise > 0) {
		return ""
	}
	if word == "of" {
		return fmt.Sprintf(" (±%.0f%% at 95%%, from time blocks)", 100*1.96*noise)
	}
	return fmt.Sprintf(", %s the noise between the levels of ±%.0f%% (95%%, from time blocks)", word, 100*1.96*noise)
}

// pct prints a percentage without a "-0%".
func pct(v float64, sign bool) string {
	v = math.Round(v)
	if v == 0 {
		v = 0 // no negative zero
	}
	if sign {
		return fmt.Sprintf("%+.0f%%", v)
	}
	return fmt.Sprintf("%.0f%%", v)
}

// knee fits two straight lines to log2(aggregate tok/s) against log2(C) (a
// slope of 1 is linear scaling, 0 is flat), split at
// each inner level, and returns the split with the least squared error when
// the second line is less than half as steep as the first; 0 otherwise.
func knee(levels []summary.Stage) int {
	if len(levels) < 4 {
		return 0
	}
	x := make([]float64, len(levels))
	y := make([]float64, len(levels))
	for i, s := range levels {
		x[i], y[i] = math.Log2(float64(s.Concurrency)), math.Log2(s.AggregateTokS)
	}
	best, bestSSE := 0, math.Inf(1)
	var slopes [2]float64
	for k := 1; k < len(levels)-1; k++ {
		s1, e1 := line(x[:k+1], y[:k+1])
		s2, e2 := line(x[k:], y[k:])
		if e1+e2 < bestSSE {
			best, bestSSE, slopes = k, e1+e2, [2]float64{s1, s2}
		}
	}
	if slopes[0] > 0 && slopes[1] < slopes[0]/2 {
		return levels[best].Concurrency
	}
	return 0
}

// line is the least-squares slope of y on x and its squared error.
func line(x, y []float64) (slope, sse float64) {
	n := float64(len(x))
	var mx, my float64
	for i := range x {
		mx += x[i] / n
		my += y[i] / n
	}
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	if sxx == 0 {
		return 0, 0
	}
	slope = sxy / sxx
	for i := range x {
		r := y[i] - (my + slope*(x[i]-mx))
		sse += r * r
	}
	return slope, sse
}
