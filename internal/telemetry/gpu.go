package telemetry

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/tokperf/tokperf/internal/record"
)

// gpuQuery is what tokperf asks nvidia-smi for, every 250 ms, from one
// long-lived process per run.
var gpuQuery = []string{"--query-gpu=index,name,memory.used,memory.total,utilization.gpu,power.draw", "--format=csv,noheader,nounits", "-lms", "250"}

// ParseGPULine reads one CSV line of that query.
func ParseGPULine(line string) (record.GPUSample, error) {
	f := strings.Split(line, ",")
	if len(f) != 6 {
		return record.GPUSample{}, fmt.Errorf("nvidia-smi line %q: want 6 fields, got %d", line, len(f))
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
		return record.GPUSample{}, fmt.Errorf("nvidia-smi line %q: index %q", line, f[0])
	}
	return record.GPUSample{Index: idx, Name: f[1], MemUsedMiB: num(f[2]), MemTotalMiB: num(f[3]), UtilPct: num(f[4]), PowerW: num(f[5])}, nil
}

// GPUWatcher samples every GPU while a run goes on: from a local
// nvidia-smi (WatchGPUs) or a DCGM exporter's endpoint (WatchDCGM).
type GPUWatcher struct {
	stop    func()
	done    chan struct{}
	mu      sync.Mutex
	samples []record.GPUSample
}

func (w *GPUWatcher) add(s ...record.GPUSample) {
	w.mu.Lock()
	w.samples = append(w.samples, s...)
	w.mu.Unlock()
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
	w := &GPUWatcher{done: make(chan struct{})}
	w.stop = func() {
		cmd.Process.Kill()
		<-w.done
		cmd.Wait()
	}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s, err := ParseGPULine(sc.Text())
			if err != nil {
				continue
			}
			s.At = clock.Now()
			w.add(s)
		}
		io.Copy(io.Discard, out)
	}()
	return w
}

// Samples returns the samples taken so far.
func (w *GPUWatcher) Samples() []record.GPUSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]record.GPUSample(nil), w.samples...)
}

// Take returns the samples taken since the last Take (or the start) and
// forgets them, so a long run keeps only the current slice's.
func (w *GPUWatcher) Take() []record.GPUSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.samples
	w.samples = nil
	return out
}

// Stop ends the sampling (nvidia-smi, or the scrapes).
func (w *GPUWatcher) Stop() { w.stop() }
