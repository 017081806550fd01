package sim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

type histogram struct {
	mu     sync.Mutex
	bounds []float64
	counts []uint64
	sum    float64
	n      uint64
}

func newHistogram(bounds ...float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds))}
}

func (h *histogram) observe(v float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, b := range h.bounds {
		if v <= b {
			h.counts[i]++
		}
	}
	h.sum += v
	h.n++
}

func (h *histogram) write(b *strings.Builder, name, help string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name)
	for i, bound := range h.bounds {
		fmt.Fprintf(b, "%s_bucket{le=\"%s\"} %d\n", name, strconv.FormatFloat(bound, 'g', -1, 64), h.counts[i])
	}
	fmt.Fprintf(b, "%s_bucket{le=\"+Inf\"} %d\n%s_sum %g\n%s_count %d\n", name, h.n, name, h.sum, name, h.n)
}

type histograms struct{ ttft, itl, e2e *histogram }

func newHistograms() *histograms {
	return &histograms{
		ttft: newHistogram(0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80),
		itl:  newHistogram(0.001, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1),
		e2e:  newHistogram(0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240),
	}
}

// metrics writes Prometheus text with the imitated engine's own names.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	if s.im.metrics == nil {
		http.NotFound(w, r) // as a server without a Prometheus endpoint
		return
	}
	e := s.eng
	x := &exposition{}
	// With a leaking pool the usage is of what is left of it.
	x.kv = float64(e.KVUsed.Load()) / float64(max(s.p.Degrade.kvTokens(s.p.KVTokens, time.Since(e.start)), 1))
	if q := e.CacheQueries.Load(); q > 0 {
		x.hitRate = float64(e.CacheHits.Load()) / float64(q)
	}
	s.im.metrics(s, x)
	metric := x.metric
	// The simulator's own health, under every engine's names: figures taken
	// while late steps grew describe a starved simulator.
	l := e.Lateness()
	metric("tokperf_sim_steps_total", "counter", "Engine steps run by the simulator.", float64(l.Steps))
	metric("tokperf_sim_late_steps_total", "counter", "Simulator steps that ended more than max(2 ms, step/5) after their deadline.", float64(l.Late))
	metric("tokperf_sim_lateness_seconds_total", "counter", "Lateness summed over the late steps.", l.Total.Seconds())
	metric("tokperf_sim_lateness_seconds_max", "gauge", "The latest step's lateness.", l.Worst.Seconds())
	metric("tokperf_sim_step_seconds_total", "counter", "The steps' modelled time summed.", l.Planned.Seconds())
	metric("tokperf_sim_busy_seconds_total", "counter", "The real time the steps took, each from the end of the one before.", l.Ran.Seconds())
	// And its machine's: packets its kernel dropped or resent stalled
	// requests on the way, however well the engine kept time.
	if k, ok := s.host(); ok {
		metric("tokperf_sim_host_dropped_packets_total", "counter", "Packets this machine's kernel dropped at its input queue (net.core.netdev_max_backlog was full).", float64(k.Dropped))
		metric("tokperf_sim_host_tcp_retransmits_total", "counter", "TCP segments this machine's kernel sent again.", float64(k.Retrans))
	}
	if rss, ok := s.p.Degrade.resident(time.Since(e.start)); ok {
		metric("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", rss)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write([]byte(x.b.String()))
}
