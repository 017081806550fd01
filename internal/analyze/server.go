package analyze

import (
	"fmt"
	"math"
	"time"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/summary"
)

// ServerReading is what the server's own /metrics counters said over a
// stage's measured window, set beside what the client received. Figures
// the engine does not expose are absent (nil).
type ServerReading struct {
	Samples     int           `json:"samples"`
	From        time.Duration `json:"from_ns"` // the first and last sample used
	To          time.Duration `json:"to_ns"`
	MaxRunning  float64       `json:"max_running"`
	MaxWaiting  float64       `json:"max_waiting"`
	MaxKV       *float64      `json:"max_kv_share,omitempty"` // fraction of the KV cache
	Preemptions float64       `json:"preemptions"`
	// GeneratedTokS is the server's generated-token rate by its counters
	// and ReceivedTokS the client's over the same window; RateUncertainty
	// is how far the two may differ from the scrape interval alone (one
	// interval over the window). They are compared only over windows of
	// MinRateIntervals scrape intervals or more, and not for engines whose
	// counters move only when a request ends.
	GeneratedTokS   *float64 `json:"generated_tok_s,omitempty"`
	ReceivedTokS    *float64 `json:"received_tok_s,omitempty"`
	RateUncertainty float64  `json:"rate_uncertainty,omitempty"`
	PromptTokS      *float64 `json:"prompt_tok_s,omitempty"`
	SpecLength      float64  `json:"spec_accept_length,omitempty"` // mean tokens per verify step
	SpecRate        float64  `json:"spec_accept_rate,omitempty"`   // accepted / draft tokens
	CacheHitRate    *float64 `json:"prefix_cache_hit_rate,omitempty"`
	// SimSteps and SimLateSteps are tokperf's simulated server's engine
	// steps in the window and how many of them ran late (it had no CPU
	// when its schedule said to step); SimWorstS its worst lateness.
	SimSteps     float64 `json:"sim_steps,omitempty"`
	SimLateSteps float64 `json:"sim_late_steps,omitempty"`
	SimWorstS    float64 `json:"sim_worst_lateness_s,omitempty"`
	// SimLateS is the late steps' lateness summed over the window: as a
	// share of the window, how far the simulator fell behind its profile.
	SimLateS float64 `json:"sim_lateness_s,omitempty"`
	// SimStepS and SimBusyS are the simulator's steps' modelled time in
	// the window and the real time they took: 1 − SimStepS/SimBusyS is
	// the share of its profile's pace it lost (Behind).
	SimStepS float64 `json:"sim_step_s,omitempty"`
	SimBusyS float64 `json:"sim_busy_s,omitempty"`
	// HostDropped and HostRetrans are the packets the simulator's machine
	// dropped at its kernel's input queue and the TCP segments it sent
	// again in the window (all of the machine's connections).
	HostDropped float64 `json:"host_dropped_packets,omitempty"`
	HostRetrans float64 `json:"host_tcp_retransmits,omitempty"`
}

// RetransLimit is how many TCP segments, per request of a stage, the
// client's own connections may send again before the stage's percentiles
// stop describing the server: on loopback a resent segment is a stall of
// 200 ms or more (the minimum retransmission timeout) in one request, and
// once 1% of requests carry one, a p99 of TTFT or E2E is the kernel's
// timer.
const RetransLimit = 0.01

// RetransMin is the fewest resent segments that say anything: the counter
// is the whole machine's, and a few resends belong to other connections
// (another test, a lost connection elsewhere) as often as to the stage.
const RetransMin = 10

// Behind is the share of its profile's pace the simulator lost in the
// window (its steps' real time over their modelled time); false when the
// file predates the measure.
func (r *ServerReading) Behind() (float64, bool) {
	if r.SimBusyS <= 0 || r.SimStepS <= 0 {
		return 0, false
	}
	return max(0, 1-r.SimStepS/r.SimBusyS), true
}

// SimLateLimit is the share of the simulator's steps that may run late
// before its figures stop describing its profile: on a busy 2-core machine
// about 1% run a few ms late with no effect on the figures (the schedule
// catches up); a starved simulator runs most of its steps late.
const SimLateLimit = 0.05

// Received is what the client measured of a stage over time, as
// summary.Acc keeps it.
type Received interface {
	// Window is the stage's measured window: first send to last end.
	Window() (from, to time.Duration)
	// TokensIn counts the tokens that arrived in (from, to], as the
	// server counted them.
	TokensIn(from, to time.Duration) float64
}

// ServerOf reads a stage's /metrics samples over its measured window; nil
// when fewer than two fall inside it (a stage shorter than the scrape
// interval says nothing).
func ServerOf(got Received, samples []record.ServerSample, names engine.Metrics) *ServerReading {
	from, to := got.Window()
	t := SummarizeCounters(samples, names, from, to)
	if t.Samples < 2 {
		return nil
	}
	r := &ServerReading{Samples: t.Samples, From: t.From, To: t.To, MaxRunning: t.MaxRunning, MaxWaiting: t.MaxWaiting,
		Preemptions: t.Preemptions, PromptTokS: finite(t.PromptTokS), SpecLength: t.SpecLength, SpecRate: t.SpecRate, CacheHitRate: finite(t.CacheHit),
		SimSteps: t.SimSteps, SimLateSteps: t.SimLate, SimWorstS: t.SimWorst, SimLateS: t.SimLateS, SimStepS: t.SimStepS, SimBusyS: t.SimBusyS, HostDropped: t.HostDropped, HostRetrans: t.HostRetrans}
	if names.KV != "" {
		r.MaxKV = &t.MaxKV
	}
	window, interval := t.To-t.From, (t.To-t.From)/time.Duration(t.Samples-1)
	if !math.IsNaN(t.GenTokS) && window >= MinRateIntervals*interval && !names.CountersAtEnd {
		received := got.TokensIn(t.From, t.To) / window.Seconds()
		r.GeneratedTokS, r.ReceivedTokS = finite(t.GenTokS), &received
		r.RateUncertainty = float64(interval) / float64(window)
	}
	return r
}

// MinRateIntervals is the shortest window, in scrape intervals, over which
// the server's token counters are compared with what the client received:
// a counter read once a second cannot resolve a one-second stage.
const MinRateIntervals = 5

// RateLimit is the disagreement beyond the scrape interval's own
// uncertainty above which the counters and the client are said to differ.
const RateLimit = 0.05

// RateDiff is received / generated − 1, the disagreement of the client
// with the server's counters; ok false when either is unknown.
func (r *ServerReading) RateDiff() (float64, bool) {
	if r.GeneratedTokS == nil || r.ReceivedTokS == nil {
		return 0, false
	}
	return *r.ReceivedTokS / *r.GeneratedTokS - 1, true
}

// warnings are the server-side checks of a stage: a client/server rate
// mismatch, a capped server, preemptions, a warm prefix cache beyond what
// the prompts share by construction (c).
func (r *ServerReading) warnings(s summary.Stage, c Asked) []Warning {
	var out []Warning
	warn := func(check, format string, args ...any) { out = append(out, warning(s, check, format, args...)) }
	if d, ok := r.RateDiff(); ok && math.Abs(d) > RateLimit+r.RateUncertainty {
		warn("server_rate", "the server's counters say %.1f tok/s generated, the client received %.1f over the same %.1f s (%+.0f%%, beyond the ±%.0f%% one scrape interval explains): tokens are lost, buffered, or counted differently", *r.GeneratedTokS, *r.ReceivedTokS, (r.To - r.From).Seconds(), 100*d, 100*r.RateUncertainty)
	}
	// Only a closed loop keeps its concurrency in flight: an open loop's
	// -c is a cap its arrivals may never reach. And a server that ran
	// fewer with nothing waiting was not sent more: it capped nothing.
	if s.Concurrency > 0 && s.Rate == 0 && !c.OpenLoop && r.MaxRunning > 0 && r.MaxRunning < float64(s.Concurrency) && r.MaxWaiting > 0 {
		warn("capped", "the server ran at most %.0f requests while %d were sent (it caps running requests: max_running, slots or KV space); up to %.0f waited in its queue, so TTFT includes queueing", r.MaxRunning, s.Concurrency, r.MaxWaiting)
	}
	if r.Preemptions > 0 {
		kv := 0.0
		if r.MaxKV != nil {
			kv = *r.MaxKV
		}
		warn("preemption", "%.0f requests were preempted (KV cache full at %.0f%%): their latency includes recomputation", r.Preemptions, 100*kv)
	}
	if r.SimSteps > 0 && r.SimLateSteps > SimLateLimit*r.SimSteps {
		warn("starved_simulator", "the simulated server fell behind real time: %.0f of its %.0f engine steps ran late (%.1f%%, the worst by %.0f ms): the figures describe a simulator starved of CPU by other work on this machine, not its profile", r.SimLateSteps, r.SimSteps, 100*r.SimLateSteps/r.SimSteps, 1000*r.SimWorstS)
	}
	if r.HostDropped > 0 || r.HostRetrans >= RetransMin {
		// The whole machine's counts: other processes' resends are in them,
		// so they gate no verdict (the client's own connections' do: the
		// stage's host reading).
		text := fmt.Sprintf("the simulator's machine dropped %.0f packets at its kernel's input queue and sent %.0f TCP segments again during the stage (the whole machine's counts, other processes' included; the host line says how many were this run's): on loopback each resent segment stalls one request 200 ms or more", r.HostDropped, r.HostRetrans)
		advice := "raise net.core.netdev_max_backlog (1,000 by default) or run fewer streams per machine (--shard)"
		if r.HostDropped == 0 {
			// Resends with no drop at the input queue: the backlog is not it.
			advice = "run fewer streams per machine (--shard) or on a quieter one; no packet was dropped at the input queue, so its backlog is not the cause"
		}
		warn("kernel_drops", "%s; %s", text, advice)
	}
	if r.CacheHitRate != nil && !c.Reuse {
		if expected, ok := c.sharedShare(s); ok && *r.CacheHitRate > expected+c.cacheLimit() {
			if c.SharedPrefix > 0 {
				warn("prefix_cache", "prefix-cache hit rate %.0f%%, more than the %.0f%% the %d-token shared prefix asked for explains: TTFT is flattered", 100**r.CacheHitRate, 100*expected, c.SharedPrefix)
			} else {
				warn("prefix_cache", "prefix-cache hit rate %.0f%% on a workload meant to be uncached: TTFT is flattered", 100**r.CacheHitRate)
			}
		}
	}
	return out
}

// GPUReading is what the GPUs did over a stage's measured window (from
// nvidia-smi), with the energy each token cost.
type GPUReading struct {
	GPUs      int       `json:"gpus"`
	Names     []string  `json:"names"`
	MaxMemMiB float64   `json:"max_mem_mib"` // summed over GPUs, the highest reading
	UtilPct   float64   `json:"util_pct"`    // mean over GPUs and samples
	PowerW    float64   `json:"power_w"`     // mean total power
	EnergyJ   float64   `json:"energy_j"`    // summed over GPUs
	PerGPUW   []float64 `json:"per_gpu_w,omitempty"`
	// JPer1000Tokens and TokensPerJ are the energy per output token.
	JPer1000Tokens float64 `json:"j_per_1000_tokens,omitempty"`
	TokensPerJ     float64 `json:"tokens_per_j,omitempty"`
}

// GPUOf reads a stage's GPU samples over its measured window; nil when
// there are none or they cover no energy.
func GPUOf(s summary.Stage, got Received, samples []record.GPUSample) *GPUReading {
	from, to := got.Window()
	g := SummarizeGPUs(samples, from, to)
	if g.GPUs == 0 || g.EnergyJ <= 0 {
		return nil
	}
	r := &GPUReading{GPUs: g.GPUs, Names: g.Names, MaxMemMiB: g.MaxMemMiB, UtilPct: g.UtilPct, PowerW: g.PowerW, EnergyJ: g.EnergyJ}
	if d := (to - from).Seconds(); d > 0 {
		for _, e := range g.PerGPUJ {
			r.PerGPUW = append(r.PerGPUW, e/d)
		}
	}
	if s.OutputTokens > 0 {
		r.JPer1000Tokens, r.TokensPerJ = 1000*g.EnergyJ/float64(s.OutputTokens), float64(s.OutputTokens)/g.EnergyJ
	}
	return r
}
