package analyze

import (
	"math"
	"sort"
	"time"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
)

// Counters is what the server's counters say about one window.
type Counters struct {
	Samples     int
	MaxRunning  float64
	MaxWaiting  float64
	MaxKV       float64 // fraction of the KV cache
	Preemptions float64
	GenTokS     float64       // Δ generated tokens / Δ time between the first and last sample; NaN with fewer than 2
	From, To    time.Duration // the first and last sample used
	PromptTokS  float64
	SpecLength  float64 // mean tokens per verify step (1 + accepted / drafts)
	SpecRate    float64 // accepted / draft tokens
	CacheHit    float64 // prefix-cache hit rate; NaN when not exposed
	// SimSteps and SimLate are the simulated server's engine steps and
	// the late ones in the window; SimWorst its worst lateness so far (s).
	SimSteps, SimLate, SimWorst float64
	// SimLateS is the late steps' lateness summed over the window (s);
	// SimStepS and SimBusyS the steps' modelled time and the real time
	// they took (s).
	SimLateS, SimStepS, SimBusyS float64
	// HostDropped and HostRetrans are the packets the simulator's machine
	// dropped at its kernel's input queue and the TCP segments it sent
	// again, in the window.
	HostDropped, HostRetrans float64
}

// SummarizeCounters reads the /metrics samples taken between from and to (the measured
// window of a stage; warm-up excluded).
func SummarizeCounters(all []record.ServerSample, n engine.Metrics, from, to time.Duration) Counters {
	var samples []record.ServerSample
	for _, x := range all {
		if x.At >= from && x.At <= to {
			samples = append(samples, x)
		}
	}
	s := Counters{Samples: len(samples), CacheHit: math.NaN(), GenTokS: math.NaN(), PromptTokS: math.NaN()}
	if len(samples) == 0 {
		return s
	}
	for _, x := range samples {
		s.MaxRunning = math.Max(s.MaxRunning, x.Values[n.Running])
		s.MaxWaiting = math.Max(s.MaxWaiting, x.Values[n.Waiting])
		s.MaxKV = math.Max(s.MaxKV, x.Values[n.KV])
	}
	first, last := samples[0], samples[len(samples)-1]
	s.From, s.To = first.At, last.At
	delta := func(name string) (float64, bool) {
		a, okA := first.Values[name]
		b, okB := last.Values[name]
		return b - a, okA && okB && name != ""
	}
	if dt := (last.At - first.At).Seconds(); dt > 0 {
		if d, ok := delta(n.Generated); ok {
			s.GenTokS = d / dt
		}
		if d, ok := delta(n.Prompt); ok {
			s.PromptTokS = d / dt
		}
	}
	s.Preemptions, _ = delta(n.Preemptions)
	if drafts, ok := delta(n.SpecDrafts); ok && drafts > 0 {
		acc, _ := delta(n.SpecAccepted)
		tokens, _ := delta(n.SpecDraftTokens)
		s.SpecLength = 1 + acc/drafts
		if tokens > 0 {
			s.SpecRate = acc / tokens
		}
	} else if v, ok := last.Values[n.SpecLength]; ok && v > 0 {
		s.SpecLength = v
	}
	s.SimSteps, _ = delta(engine.SimSteps)
	s.SimLate, _ = delta(engine.SimLateSteps)
	s.SimWorst = last.Values[engine.SimLatenessMax]
	s.SimLateS, _ = delta(engine.SimLateness)
	s.SimStepS, _ = delta(engine.SimStepSeconds)
	s.SimBusyS, _ = delta(engine.SimBusySeconds)
	s.HostDropped, _ = delta(engine.SimHostDropped)
	s.HostRetrans, _ = delta(engine.SimHostRetrans)
	if q, ok := delta(n.CacheQueries); ok && q > 0 {
		h, _ := delta(n.CacheHits)
		s.CacheHit = h / q
	} else if v, ok := last.Values[n.CacheHitRate]; ok {
		s.CacheHit = v
	}
	return s
}

// GPUWindow is what the GPUs did during a window.
type GPUWindow struct {
	GPUs      int
	Names     []string
	MaxMemMiB float64 // summed over GPUs, the highest reading
	UtilPct   float64 // mean over GPUs and samples
	PowerW    float64 // mean total power
	EnergyJ   float64 // integrated power, summed over GPUs
	PerGPUJ   []float64
}

// SummarizeGPUs integrates power over [from, to] (trapezoids between
// samples, cut at the window's edges) for each GPU and sums.
func SummarizeGPUs(all []record.GPUSample, from, to time.Duration) GPUWindow {
	by := map[int][]record.GPUSample{}
	for _, s := range all {
		by[s.Index] = append(by[s.Index], s)
	}
	var idx []int
	for i := range by {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	st := GPUWindow{GPUs: len(idx)}
	var utilSum float64
	var utilN int
	type memKey struct {
		at    time.Duration
		index int
	}
	mem := map[memKey]float64{}
	for _, i := range idx {
		ss := by[i]
		sort.Slice(ss, func(a, b int) bool { return ss[a].At < ss[b].At })
		st.Names = append(st.Names, ss[0].Name)
		// Before its first sample and after its last, a GPU is held at
		// the power it reported nearest (nvidia-smi starts late and
		// samples once a second): an uncovered edge would count as 0 W.
		pw := ss
		if first := ss[0]; first.At > from {
			pw = append([]record.GPUSample{{At: from, PowerW: first.PowerW}}, pw...)
		}
		if last := ss[len(ss)-1]; last.At < to {
			pw = append(pw[:len(pw):len(pw)], record.GPUSample{At: to, PowerW: last.PowerW})
		}
		e := 0.0
		for k := 1; k < len(pw); k++ {
			a, b := pw[k-1], pw[k]
			lo, hi := max(a.At, from), min(b.At, to)
			if hi <= lo || b.At == a.At {
				continue
			}
			// Power at lo and hi on the line between the two samples.
			at := func(t time.Duration) float64 {
				return a.PowerW + (b.PowerW-a.PowerW)*float64(t-a.At)/float64(b.At-a.At)
			}
			e += (at(lo) + at(hi)) / 2 * (hi - lo).Seconds()
		}
		st.PerGPUJ = append(st.PerGPUJ, e)
		st.EnergyJ += e
		for _, s := range ss {
			if s.At >= from && s.At <= to {
				utilSum += s.UtilPct
				utilN++
				// One reading per GPU a moment: two of the same GPU that
				// round to one moment (a busy reader) count once.
				k := memKey{s.At.Round(100 * time.Millisecond), i}
				mem[k] = max(mem[k], s.MemUsedMiB)
			}
		}
	}
	total := map[time.Duration]float64{}
	for k, m := range mem {
		total[k.at] += m
	}
	for _, m := range total {
		st.MaxMemMiB = max(st.MaxMemMiB, m)
	}
	if utilN > 0 {
		st.UtilPct = utilSum / float64(utilN)
	}
	if d := (to - from).Seconds(); d > 0 {
		st.PowerW = st.EnergyJ / d
	}
	return st
}
