package bench

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/telemetry"
)

// slicing cuts a running stage into slices of a fixed length: a goroutine
// ends each slice on time, takes the server's and the GPUs' samples of it
// and writes them and the slice's figures to the result file, so the
// stage keeps nothing of a finished slice and a killed run keeps every
// finished one.
type slicing struct {
	mu       sync.Mutex
	sl       *analyze.Slicer
	clock    record.Clock
	file     *sink
	watch    *telemetry.Watcher    // nil without /metrics
	gpus     *telemetry.GPUWatcher // nil without nvidia-smi
	names    engine.Metrics
	progress io.Writer
	label    string
	done     func(record.Slice) // told each slice written; nil: none
	host     *hostMeter
	count    int
	// carry are samples taken at or after the last slice's end: they
	// belong to the next (a scrape at the very moment a slice ends counts
	// in the next, whichever of the two ran first).
	carry []record.ServerSample
	// next is the current slice's end; early holds records that finished
	// at or after it but came before it was closed: the next slice's.
	next, length time.Duration
	early        []record.Record

	stop chan struct{}
	over chan struct{}
}

// startSlicing starts slicing stage p at offset start, every length.
func startSlicing(p int, target int, length time.Duration, start time.Duration, slo record.SLO, s *slicing) *slicing {
	s.sl = analyze.NewSlicer(p, target, start, slo)
	s.next, s.length = start+length, length
	s.stop, s.over = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.over)
		for k := 1; ; k++ {
			t := time.NewTimer(start + time.Duration(k)*length - s.clock.Now())
			select {
			case <-t.C:
				s.end(start + time.Duration(k)*length)
			case <-s.stop:
				t.Stop()
				return
			}
		}
	}()
	return s
}

// add takes a finished record (from the runner's one goroutine).
func (s *slicing) add(r *record.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Done >= s.next {
		s.early = append(s.early, *r)
		return
	}
	s.sl.Add(r)
}

// end closes the slice at offset to and writes it.
func (s *slicing) end(to time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var taken []record.ServerSample
	if s.watch != nil {
		taken = s.watch.Take()
	}
	metrics := s.carry
	s.carry = nil
	for _, m := range taken {
		if m.At < to {
			metrics = append(metrics, m)
		} else {
			s.carry = append(s.carry, m)
		}
	}
	var gpu []record.GPUSample
	if s.gpus != nil {
		gpu = s.gpus.Take()
		for i := range gpu {
			gpu[i].Stage = s.sl.Stage()
		}
	}
	line := s.sl.Close(to, metrics, gpu, s.names)
	if h, ok := s.host.take(line.Stage, to); ok {
		line.Host = &h
	}
	s.next += s.length
	early := s.early
	s.early = nil
	for i := range early {
		if early[i].Done >= s.next {
			s.early = append(s.early, early[i])
		} else {
			s.sl.Add(&early[i])
		}
	}
	s.file.keep(s.file.w.WriteMetrics(taken)) // every sample goes to the file as it is taken
	s.file.keep(s.file.w.WriteGPU(line.Stage, gpu))
	s.file.keep(s.file.w.WriteSlice(line))
	s.count++
	fmt.Fprintf(s.progress, "%s slice %d (%s): %.1f tok/s, %d ok, %d failed, p99 TTFT %.1f ms\n", s.label, line.Index, analyze.SliceLabel(line.From-s.sl.Start()), line.AggregateTokS, line.OK, line.Errors, line.TTFT.P99)
	if s.done != nil {
		s.done(line)
	}
}

// finish stops the timer and ends the last slice, cut short, at offset to.
func (s *slicing) finish(to time.Duration) {
	close(s.stop)
	<-s.over
	s.end(to)
}
