package telemetry

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// GPUSample is one reading of one GPU from nvidia-smi.
type GPUSample struct {
	At          time.Duration `json:"at_ns"`
	Index       int           `json:"index"`
	Name        string        `json:"name"`
	MemUsedMiB  float64       `json:"mem_used_mib"`
	MemTotalMiB float64       `json:"mem_total_mib"`
	UtilPct     float64       `json:"util_pct"`
	PowerW      float64       `json:"power_w"`
}

// gpuQuery is what tokperf asks nvidia-smi for, every 250 ms, from one
// long-lived process per run.
var gpuQuery = []string{"--query-gpu=index,name,memory.used,memory.total,utilization.gpu,power.draw", "--format=csv,noheader,nounits", "-lms", "250"}

// ParseGPULine reads one CSV line of that query.
func ParseGPULine(line string) (GPUSample, error) {
	f := strings.Split(line, ",")
	if len(f) != 6 {
		return GPUSample{}, fmt.Errorf("nvidia-smi line %q: want 6 fields, got %d", line, len(f))
	}
	for i := range f {
		f[i] = strings.TrimSpace(f[i])
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return 0 // "[N/A]" and the like: no reading, not an infinite one
		}
		return v
	}
	idx, err := strconv.Atoi(f[0])
	if err != nil {
		return GPUSample{}, fmt.Errorf("nvidia-smi line %q: index %q", line, f[0])
	}
	return GPUSample{Index: idx, Name: f[1], MemUsedMiB: num(f[2]), MemTotalMiB: num(f[3]), UtilPct: num(f[4]), PowerW: num(f[5])}, nil
}

// GPUWatcher samples every GPU while a run goes on.
type GPUWatcher struct {
	cmd     *exec.Cmd
	done    chan struct{}
	mu      sync.Mutex
	samples []GPUSample
}

// WatchGPUs starts nvidia-smi when it is on PATH; nil when it is not.
func WatchGPUs(ctx context.Context, clock record.Clock) *GPUWatcher {
	path, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil
	}
	cmd := exec.CommandContext(ctx, path, gpuQuery...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil
	}
	if err := cmd.Start(); err != nil {
		return nil
	}
	w := &GPUWatcher{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s, err := ParseGPULine(sc.Text())
			if err != nil {
				continue
			}
			s.At = clock.Now()
			w.mu.Lock()
			w.samples = append(w.samples, s)
			w.mu.Unlock()
		}
		io.Copy(io.Discard, out)
	}()
	return w
}

// Samples returns the samples taken so far.
func (w *GPUWatcher) Samples() []GPUSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]GPUSample(nil), w.samples...)
}

// Stop ends nvidia-smi.
func (w *GPUWatcher) Stop() {
	w.cmd.Process.Kill()
	<-w.done
	w.cmd.Wait()
}

// GPUStage is what the GPUs did during a window.
type GPUStage struct {
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
func SummarizeGPUs(all []GPUSample, from, to time.Duration) GPUStage {
	by := map[int][]GPUSample{}
	for _, s := range all {
		by[s.Index] = append(by[s.Index], s)
	}
	var idx []int
	for i := range by {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	st := GPUStage{GPUs: len(idx)}
	var utilSum float64
	var utilN int
	mem := map[time.Duration]float64{}
	for _, i := range idx {
		ss := by[i]
		sort.Slice(ss, func(a, b int) bool { return ss[a].At < ss[b].At })
		st.Names = append(st.Names, ss[0].Name)
		// Before its first sample and after its last, a GPU is held at
		// the power it reported nearest (nvidia-smi starts late and
		// samples once a second): an uncovered edge would count as 0 W.
		pw := ss
		if first := ss[0]; first.At > from {
			pw = append([]GPUSample{{At: from, PowerW: first.PowerW}}, pw...)
		}
		if last := ss[len(ss)-1]; last.At < to {
			pw = append(pw[:len(pw):len(pw)], GPUSample{At: to, PowerW: last.PowerW})
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
				mem[s.At.Round(100*time.Millisecond)] += s.MemUsedMiB
			}
		}
	}
	for _, m := range mem {
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
