package bench

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
)

// promOutput is --live prometheus=ADDR: tokperf's own client-side metrics
// at /metrics while the run goes on, so a soak can be watched in Grafana.
// The records goroutine adds each measured record under mu; a scrape
// copies the figures under mu, so what it reads is always a whole number
// of records (the first n the run finished). In-flight is an atomic the
// requests' own goroutines bump, never a lock.
type promOutput struct {
	flight atomic.Int64
	stop   func()

	mu       sync.Mutex
	byStatus map[record.Status]uint64
	errs     uint64
	tokens   uint64
	ttft     hist
	itl      hist
	conc     float64 // the running stage's concurrency (a cap for an open loop; 0: none)
	rate     float64 // its rate, requests/s (0: a closed loop)
}

// The metrics of docs/METRICS.md's live output, all named tokperf_client_.
var (
	promFlight   = prometheus.NewDesc("tokperf_client_requests_in_flight", "Measured requests sent and not yet ended.", nil, nil)
	promRequests = prometheus.NewDesc("tokperf_client_requests_total", "Measured requests ended, by status (ok, http_error, timeout, cancelled, ...).", []string{"status"}, nil)
	promErrors   = prometheus.NewDesc("tokperf_client_errors_total", "Measured requests that failed (not ok, cancelled ones aside).", nil, nil)
	promTokens   = prometheus.NewDesc("tokperf_client_output_tokens_total", "Output tokens of the measured requests that ended ok: its rate is the aggregate output tok/s.", nil, nil)
	promTTFT     = prometheus.NewDesc("tokperf_client_ttft_seconds", "Time to first token (first_token - sent) of each ok request.", nil, nil)
	promITL      = prometheus.NewDesc("tokperf_client_itl_seconds", "Inter-token latency of ok requests: each gap between token chunks over the later chunk's tokens, once per token.", nil, nil)
	promConc     = prometheus.NewDesc("tokperf_client_stage_concurrency", "The running stage's concurrency (an open loop's cap; 0: none).", nil, nil)
	promRate     = prometheus.NewDesc("tokperf_client_stage_rate", "The running stage's arrival rate, requests/s (0: a closed loop).", nil, nil)
)

// TTFT buckets run from 1 ms to 33 s, ITL's from 0.25 ms to 2 s, doubling.
var (
	ttftBounds = prometheus.ExponentialBuckets(0.001, 2, 16)
	itlBounds  = prometheus.ExponentialBuckets(0.00025, 2, 14)
)

// startProm listens at addr (through env, as the simulator does) and says
// where on env's progress.
func startProm(addr string, env *Env) (output, error) {
	ln, err := env.listen(addr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(env.progress(), "live: prometheus metrics at http://%s/metrics while the run goes on\n", ln.Addr())
	o := &promOutput{byStatus: map[record.Status]uint64{}, ttft: newHist(ttftBounds), itl: newHist(itlBounds)}
	reg := prometheus.NewRegistry()
	reg.MustRegister(o)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	o.stop = serve(ln, mux)
	return o, nil
}

func (o *promOutput) inFlight() *atomic.Int64 { return &o.flight }

func (o *promOutput) close() { o.stop() }

func (o *promOutput) stage(p runner.Plan) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.conc, o.rate = float64(p.Concurrency), p.Rate
}

// add counts one finished measured record: its status, and for an ok one
// its tokens, TTFT and ITL as docs/METRICS.md §2 defines them.
func (o *promOutput) add(r *record.Record) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.byStatus[r.Status]++
	if !r.OK() {
		if r.Status != record.StatusCancelled {
			o.errs++
		}
		return
	}
	o.tokens += uint64(max(r.OutputTokens, 0))
	if ttft, ok := r.TTFT(); ok {
		o.ttft.observe(ttft.Seconds(), 1)
	}
	for i := 1; i < len(r.Chunks); i++ {
		if c := r.Chunks[i]; c.Tokens > 0 {
			o.itl.observe((c.At-r.Chunks[i-1].At).Seconds()/float64(c.Tokens), uint64(c.Tokens))
		}
	}
}

func (o *promOutput) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{promFlight, promRequests, promErrors, promTokens, promTTFT, promITL, promConc, promRate} {
		ch <- d
	}
}

// Collect reads the figures of the records added so far, all at once.
func (o *promOutput) Collect(ch chan<- prometheus.Metric) {
	ms := []prometheus.Metric{prometheus.MustNewConstMetric(promFlight, prometheus.GaugeValue, float64(o.flight.Load()))}
	o.mu.Lock()
	for st, n := range o.byStatus {
		ms = append(ms, prometheus.MustNewConstMetric(promRequests, prometheus.CounterValue, float64(n), string(st)))
	}
	ms = append(ms,
		prometheus.MustNewConstMetric(promErrors, prometheus.CounterValue, float64(o.errs)),
		prometheus.MustNewConstMetric(promTokens, prometheus.CounterValue, float64(o.tokens)),
		o.ttft.metric(promTTFT), o.itl.metric(promITL),
		prometheus.MustNewConstMetric(promConc, prometheus.GaugeValue, o.conc),
		prometheus.MustNewConstMetric(promRate, prometheus.GaugeValue, o.rate))
	o.mu.Unlock()
	for _, m := range ms {
		ch <- m
	}
}

// hist is a histogram of durations in seconds over fixed upper bounds.
type hist struct {
	bounds []float64 // upper bounds, seconds, rising
	counts []uint64  // per bucket, the last above every bound
	n      uint64
	sum    float64 // seconds
}

func newHist(bounds []float64) hist {
	return hist{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

// observe counts v seconds n times.
func (h *hist) observe(v float64, n uint64) {
	i, _ := slices.BinarySearch(h.bounds, v) // the first bound ≥ v: Prometheus's le
	h.counts[i] += n
	h.n += n
	h.sum += v * float64(n)
}

// metric is h as Prometheus's cumulative buckets.
func (h *hist) metric(d *prometheus.Desc) prometheus.Metric {
	cum := make(map[float64]uint64, len(h.bounds))
	var c uint64
	for i, b := range h.bounds {
		c += h.counts[i]
		cum[b] = c
	}
	return prometheus.MustNewConstHistogram(d, h.n, h.sum, cum)
}
