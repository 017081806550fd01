package analyze

import (
	"fmt"
	"math"
	"time"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stability"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// Slicer cuts one stage into time slices as it runs: records are added as
// they finish, Close ends the current slice and returns its figures. It
// keeps only the current slice's requests, so a stage of any length holds
// flat memory. Not safe for concurrent use.
//
//	sl := analyze.NewSlicer(stage, 8, start, setup.SLO)
//	for each finished rec { sl.Add(&rec) }
//	line := sl.Close(now, serverSamples, gpuSamples, names) // every minute
type Slicer struct {
	stage, target int
	slo           record.SLO
	acc           *summary.Acc
	index         int
	start, from   time.Duration
	prev          *record.ServerSample // the last sample of the slice before
}

// NewSlicer starts slicing stage (at concurrency target) from offset from.
func NewSlicer(stage, target int, from time.Duration, slo record.SLO) *Slicer {
	return &Slicer{stage: stage, target: target, slo: slo, start: from, from: from, acc: summary.NewAcc(target, slo)}
}

// Stage is the stage sliced.
func (s *Slicer) Stage() int { return s.stage }

// Start is the offset of the stage's first slice.
func (s *Slicer) Start() time.Duration { return s.start }

// Add takes one finished record; it counts in the slice it finished in.
func (s *Slicer) Add(r *record.Record) { s.acc.Add(r) }

// Close ends the slice at offset to with the server's and the GPUs'
// samples taken during it, returns its figures and starts the next.
func (s *Slicer) Close(to time.Duration, metrics []record.ServerSample, gpu []record.GPUSample, names engine.Metrics) record.Slice {
	st := s.acc.Stage()
	sl := record.Slice{Stage: s.stage, Index: s.index, From: s.from, To: to, Requests: st.Requests - st.Cancelled, OK: st.OK,
		OutputTokens: st.OutputTokens, TTFT: sliceDist(st.TTFT), ITL: sliceDist(st.ITL), TPOT: sliceDist(st.TPOT), E2E: sliceDist(st.E2E)}
	for _, n := range st.Errors {
		sl.Errors += n
	}
	if d := (to - s.from).Seconds(); d > 0 {
		sl.AggregateTokS = float64(st.OutputTokens) / d
	}
	if len(metrics) > 0 {
		window := metrics
		if s.prev != nil {
			// Counters move between the slices' scrapes too.
			window = append([]record.ServerSample{*s.prev}, metrics...)
		}
		c := SummarizeCounters(window, names, window[0].At, window[len(window)-1].At)
		sl.ServerSamples = len(metrics)
		sl.MaxRunning, sl.MaxWaiting, sl.MaxKVShare, sl.Preemptions = c.MaxRunning, c.MaxWaiting, c.MaxKV, c.Preemptions
		last := metrics[len(metrics)-1]
		sl.ResidentBytes = last.Values[engine.Resident]
		s.prev = &last
	}
	if g := SummarizeGPUs(gpu, s.from, to); g.GPUs > 0 {
		sl.GPUMemMiB, sl.GPUPowerW = g.MaxMemMiB, g.PowerW
	}
	s.index++
	s.from = to
	s.acc = summary.NewAcc(s.target, s.slo)
	return sl
}

func sliceDist(d stats.Dist) record.SliceDist {
	if d.N == 0 {
		return record.SliceDist{}
	}
	return record.SliceDist{N: d.N, P50: d.P50, P99: d.P99}
}

// Stability judges a stage's slices: throughput, p99 TTFT and ITL, median
// TPOT, the failed share, and the server's and GPUs' memory where they
// were read. A slice in which no request finished has no latency or
// throughput figure.
func Stability(slices []record.Slice, slice time.Duration) stability.Verdict {
	in := stability.Input{Slice: slice, Warmup: -1}
	n := len(slices)
	agg, ttft, itl, tpot, errs := nan(n), nan(n), nan(n), nan(n), nan(n)
	mem, gpu, host := nan(n), nan(n), nan(n)
	hasMem, hasGPU, hasHost := false, false, false
	for i, s := range slices {
		if c, ok := contention(s.Host); ok {
			host[i], hasHost = c, true
		}
		in.At = append(in.At, s.From-slices[0].From)
		in.Len = append(in.Len, s.Len())
		if s.Requests > 0 {
			agg[i] = s.AggregateTokS
			errs[i] = float64(s.Errors) / float64(s.Requests)
		}
		pick(ttft, i, s.TTFT.N, s.TTFT.P99)
		pick(itl, i, s.ITL.N, s.ITL.P99)
		pick(tpot, i, s.TPOT.N, s.TPOT.P50)
		if s.ResidentBytes > 0 {
			mem[i], hasMem = s.ResidentBytes, true
		}
		if s.GPUMemMiB > 0 {
			gpu[i], hasGPU = s.GPUMemMiB*(1<<20), true
		}
	}
	in.Series = []stability.Series{
		{Name: "aggregate", Field: "aggregate_tok_s", Unit: stability.TokS, Values: agg},
		{Name: "p99 TTFT", Field: "ttft_p99_ms", Unit: stability.Ms, Values: ttft},
		{Name: "p99 ITL", Field: "itl_p99_ms", Unit: stability.Ms, Values: itl},
		{Name: "TPOT", Field: "tpot_p50_ms", Unit: stability.Ms, Values: tpot},
	}
	if anyFailed(slices) {
		in.Series = append(in.Series, stability.Series{Name: "errors", Field: "error_share", Unit: stability.Share, Values: errs})
	}
	if hasMem {
		in.Series = append(in.Series, stability.Series{Name: "server memory", Field: "resident_bytes", Unit: stability.Bytes, Values: mem})
	} else if scraped(slices) {
		in.Unread = append(in.Unread, "server memory not read (the server's /metrics has no "+engine.Resident+"): a leak would not show")
	} else {
		in.Unread = append(in.Unread, "server memory not read (no /metrics from the server): a leak would not show")
	}
	if hasGPU {
		in.Series = append(in.Series, stability.Series{Name: "GPU memory", Field: "gpu_mem_bytes", Unit: stability.Bytes, Values: gpu})
	}
	if hasHost {
		in.Host = host
	}
	return stability.Judge(in)
}

// contention is a slice's host CPU contention as a share of its time: the
// machine's CPU pressure (some task waited for a CPU) where the kernel
// reports it, which a neighbour taking CPU from a server on this machine
// moves too; else the share of tokperf's own threads' time spent waiting.
func contention(h *record.Host) (float64, bool) {
	switch {
	case h == nil:
		return 0, false
	case h.Has("pressure"):
		return h.PressureShare(), true
	case h.Has("schedstat"):
		return h.WaitShare(), true
	}
	return 0, false
}

// scraped reports whether the server's /metrics were read in any slice.
func scraped(slices []record.Slice) bool {
	for _, s := range slices {
		if s.ServerSamples > 0 {
			return true
		}
	}
	return false
}

func anyFailed(slices []record.Slice) bool {
	for _, s := range slices {
		if s.Errors > 0 {
			return true
		}
	}
	return false
}

func pick(dst []float64, i, n int, v float64) {
	if n > 0 {
		dst[i] = v
	}
}

func nan(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

// stabilityWarning is a run warning for a stage whose slices are not stable.
func stabilityWarning(s *Stage) *Warning {
	if s.Stability == nil || s.Stability.Kind == "stable" || s.Stability.Kind == "too_short" {
		return nil
	}
	w := warning(s.Stage, "stability", "%s", s.Stability.Text)
	return &w
}

// SliceLabel names a slice by its start in the stage: "12m", "1h05m".
func SliceLabel(at time.Duration) string {
	m := int(at.Round(time.Second).Minutes())
	if m < 60 {
		return fmt.Sprintf("%dm%02ds", m, int(at.Round(time.Second).Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", m/60, m%60)
}
