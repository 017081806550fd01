package analyze

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/summary"
	"github.com/tokperf/tokperf/internal/telemetry"
)

// ServerView is what the server's own counters said about a stage, set
// beside what the client measured.
type ServerView struct {
	Stage      telemetry.Stage
	ClientTokS float64 // tokens the client received in the same window, per second
	Line       string  // the one-line reading
	Warnings   []Warning
}

// Received is what the client measured of a stage over time, as
// summary.Acc keeps it.
type Received interface {
	// Window is the stage's measured window: first send to last end.
	Window() (from, to time.Duration)
	// TokensIn counts the tokens that arrived in (from, to].
	TokensIn(from, to time.Duration) int
}

// Server reads a stage's /metrics samples: whether the server capped the
// running requests below the target, queued, ran out of KV cache or
// preempted, hit a prefix cache on a workload meant to be uncached, how
// well speculation was accepted, and whether its generated-token rate
// agrees with what the client received over the same window.
func Server(s summary.Stage, got Received, samples []telemetry.Sample, names telemetry.Names) *ServerView {
	from, to := got.Window()
	t := telemetry.Summarize(samples, names, from, to)
	if t.Samples < 2 {
		return nil // a stage shorter than the scrape interval says nothing
	}
	v := &ServerView{Stage: t}
	label := Label(s)
	warn := func(check, format string, args ...any) {
		v.Warnings = append(v.Warnings, Warning{Stage: label, Check: check, Text: fmt.Sprintf(format, args...)})
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("running ≤ %.0f, waiting ≤ %.0f", t.MaxRunning, t.MaxWaiting))
	if names.KV != "" {
		parts = append(parts, fmt.Sprintf("KV cache ≤ %.2g%%", 100*t.MaxKV))
	}
	if t.SpecLength > 0 {
		sp := fmt.Sprintf("speculation accepts %.2f tokens per step", t.SpecLength)
		if t.SpecRate > 0 {
			sp += fmt.Sprintf(" (%.0f%% of drafts)", 100*t.SpecRate)
		}
		parts = append(parts, sp)
	}
	if !math.IsNaN(t.GenTokS) && t.To > t.From {
		tokens := got.TokensIn(t.From, t.To)
		v.ClientTokS = float64(tokens) / (t.To - t.From).Seconds()
		d := v.ClientTokS/t.GenTokS - 1
		parts = append(parts, fmt.Sprintf("generated %.1f tok/s by its counters vs %.1f received (%+.1f%%)", t.GenTokS, v.ClientTokS, 100*d))
		if math.Abs(d) > 0.05 {
			warn("server_rate", "the server's counters say %.1f tok/s generated, the client received %.1f over the same %.1f s (%+.0f%%): tokens are lost, buffered, or counted differently", t.GenTokS, v.ClientTokS, (t.To - t.From).Seconds(), 100*d)
		}
	}
	v.Line = fmt.Sprintf("%s: server metrics (%d samples): %s", label, t.Samples, strings.Join(parts, "; "))
	if s.Concurrency > 0 && t.MaxRunning > 0 && t.MaxRunning < float64(s.Concurrency) {
		warn("capped", "the server ran at most %.0f requests while %d were sent (it caps running requests: max_running, slots or KV space); up to %.0f waited in its queue, so TTFT includes queueing", t.MaxRunning, s.Concurrency, t.MaxWaiting)
	}
	if t.Preemptions > 0 {
		warn("preemption", "%.0f requests were preempted (KV cache full at %.0f%%): their latency includes recomputation", t.Preemptions, 100*t.MaxKV)
	}
	if !math.IsNaN(t.CacheHit) && t.CacheHit > 0.01 {
		warn("prefix_cache", "prefix-cache hit rate %.0f%% on a workload meant to be uncached: TTFT is flattered", 100*t.CacheHit)
	}
	return v
}

// GPUs reads nvidia-smi's samples over a stage's measured window: memory,
// utilization, power, and the energy per token it cost.
func GPUs(s summary.Stage, got Received, samples []telemetry.GPUSample) *ServerView {
	from, to := got.Window()
	g := telemetry.SummarizeGPUs(samples, from, to)
	if g.GPUs == 0 || g.EnergyJ <= 0 {
		return nil
	}
	line := fmt.Sprintf("%s: GPUs %d × %s: memory ≤ %.1f GiB, utilization %.0f%%, power %.0f W, %.0f J", Label(s), g.GPUs, g.Names[0], g.MaxMemMiB/1024, g.UtilPct, g.PowerW, g.EnergyJ)
	if d := (to - from).Seconds(); g.GPUs > 1 && d > 0 {
		var per []string
		for _, e := range g.PerGPUJ {
			per = append(per, fmt.Sprintf("%.0f W", e/d))
		}
		line += " (per GPU " + strings.Join(per, ", ") + ")"
	}
	if s.OutputTokens > 0 {
		line += fmt.Sprintf(": %.1f J per 1000 tokens, %.2f tokens per joule", 1000*g.EnergyJ/float64(s.OutputTokens), float64(s.OutputTokens)/g.EnergyJ)
	}
	return &ServerView{Line: line}
}
