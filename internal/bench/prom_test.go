package bench

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/workload"
)

// scrape is one read of the live endpoint at offset at of the run's clock.
type scrape struct {
	at       time.Duration
	families map[string]*dto.MetricFamily
}

func (s scrape) value(name string) float64 {
	f := s.families[name]
	if f == nil || len(f.Metric) == 0 {
		return math.NaN()
	}
	m := f.Metric[0]
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	return math.NaN()
}

// statuses are requests_total by its status label.
func (s scrape) statuses() map[string]float64 {
	out := map[string]float64{}
	if f := s.families["tokperf_client_requests_total"]; f != nil {
		for _, m := range f.Metric {
			out[m.Label[0].GetValue()] = m.Counter.GetValue()
		}
	}
	return out
}

func (s scrape) hist(name string) *dto.Histogram {
	if f := s.families[name]; f != nil && len(f.Metric) == 1 {
		return f.Metric[0].Histogram
	}
	return &dto.Histogram{}
}

// get scrapes /metrics through dial.
func get(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error)) (map[string]*dto.MetricFamily, error) {
	tr := &http.Transport{DialContext: dial, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://127.0.0.1:9464/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// The live Prometheus output, scraped while a sliced run goes on (as each
// slice ends) and after its last request (as the last slice is written),
// counts exactly the measured records the result file holds: each scrape's
// requests by status, errors, output tokens, TTFT histogram (count, sum,
// buckets) and ITL (count, sum) are those of the file's first n measured
// records, n the requests it counted, warm-up left out; its in-flight
// gauge holds every measured request that was sent before and ended after
// the scrape's instant and none that ended before it was sent (0 at the
// end); and the endpoint is closed once the run returns. In virtual time,
// the metrics served on an in-memory network of their own.
func TestLiveOutputCountsTheRecords(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "r.jsonl")
	load := DefaultLoad([]int{4})
	load.Duration, load.Slice = 6*time.Second, time.Second
	var scrapes []scrape
	liveSweep(t, "soak", load, out, func(env *Env, get func() (map[string]*dto.MetricFamily, error)) func() {
		env.SliceDone = func(sl record.Slice) {
			fams, err := get()
			if err != nil {
				t.Errorf("scraping at slice %d: %v", sl.Index, err)
				return
			}
			scrapes = append(scrapes, scrape{sl.To, fams})
		}
		return func() {}
	})
	recs := measured(t, out)
	if len(scrapes) < 6 {
		t.Fatalf("%d scrapes, want one per slice (6 or more)", len(scrapes))
	}
	mid := 0
	for i, s := range scrapes {
		n := 0
		for _, c := range s.statuses() {
			n += int(c)
		}
		if n > len(recs) {
			t.Fatalf("scrape %d counts %d requests, the file holds %d", i, n, len(recs))
		}
		want := liveFigures(recs[:n])
		checkScrape(t, i, s, want)
		lo, hi := inFlight(recs, s.at)
		got := s.value("tokperf_client_requests_in_flight")
		if got < float64(lo) || got > float64(hi) {
			t.Errorf("scrape %d at %v: %v in flight, the records say %d to %d", i, s.at, got, lo, hi)
		}
		if got > 0 && n > 0 && n < len(recs) {
			mid++
		}
		if c := s.value("tokperf_client_stage_concurrency"); c != 4 {
			t.Errorf("scrape %d: stage concurrency %v, want 4", i, c)
		}
	}
	if mid == 0 {
		t.Errorf("no scrape saw the run under way (requests in flight, some but not all counted)")
	}
	last := scrapes[len(scrapes)-1]
	if n := len(recs); int(sum(last.statuses())) != n || last.value("tokperf_client_requests_in_flight") != 0 {
		t.Errorf("after the last request: %v requests counted and %v in flight, want all %d and none", sum(last.statuses()), last.value("tokperf_client_requests_in_flight"), n)
	}
}

// liveSweep runs load with --live in virtual time against the seed profile
// with failures of three kinds (the malformed and truncated ones after
// some tokens), the metrics on an in-memory network of their own; arm sets
// env's hooks, given a scrape, and returns what to do once the run is
// over. It checks the progress says where the metrics are and that the
// endpoint is closed after the run.
func liveSweep(t *testing.T, cmd string, load Load, out string, arm func(env *Env, get func() (map[string]*dto.MetricFamily, error)) func()) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		mn, lmn := memnet.New(), memnet.New()
		p, err := sim.LoadProfile("seed")
		if err != nil {
			t.Fatal(err)
		}
		p.Faults = map[string]sim.Fault{"*": {HTTP500: 0.08, Malformed: 0.05, Truncate: 0.05}}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); sim.New(p, sim.Options{NoTrace: true}).Serve(ctx, mn) }()
		defer func() { stop(); <-done }()
		cfg := SweepConfig{Command: cmd, Target: Target{URL: "http://127.0.0.1:8000"}, Load: load, Out: out,
			Workload: workload.Synthetic{InputTokens: 64, OutputTokens: 40, IgnoreEOS: true, Seed: 3},
			Live:     &Output{Kind: "prometheus", Addr: "127.0.0.1:9464"}}
		var progress strings.Builder
		env := &Env{Dial: mn.Dial, Progress: &progress,
			Listen: func(addr string) (net.Listener, error) {
				if addr != cfg.Live.Addr {
					return nil, fmt.Errorf("listening at %s: only --live's address may be", addr)
				}
				return lmn, nil
			}}
		over := arm(env, func() (map[string]*dto.MetricFamily, error) { return get(ctx, lmn.Dial) })
		_, err = Sweep(context.Background(), cfg, env)
		over()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(progress.String(), "live: prometheus metrics at http://") {
			t.Errorf("the progress does not say where the metrics are:\n%s", progress.String())
		}
		if _, err := get(ctx, lmn.Dial); err == nil {
			t.Errorf("the live endpoint still answers after the run")
		}
	})
}

// A sweep's live output, scraped every 50 ms of its run, follows its
// stages: each scrape counts exactly the file's first n measured records
// (the fold's path, where the soak above takes the slices'), says the
// running stage's concurrency and has at most that many in flight; some
// scrapes see each level under way.
func TestLiveOutputFollowsASweep(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "r.jsonl")
	load := DefaultLoad([]int{2, 6})
	load.Requests = 40
	var polls []scrape
	liveSweep(t, "sweep", load, out, func(_ *Env, get func() (map[string]*dto.MetricFamily, error)) func() {
		quit, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for {
				select {
				case <-quit:
					return
				case <-time.After(50 * time.Millisecond):
				}
				if fams, err := get(); err == nil {
					polls = append(polls, scrape{families: fams})
				}
			}
		}()
		return func() { close(quit); <-done }
	})
	recs := measured(t, out)
	busy := map[float64]int{}
	last := 0
	for i, s := range polls {
		n := int(sum(s.statuses()))
		if n < last || n > len(recs) {
			t.Fatalf("poll %d counts %d requests, after %d, of the file's %d", i, n, last, len(recs))
		}
		last = n
		checkScrape(t, i, s, liveFigures(recs[:n]))
		c, in := s.value("tokperf_client_stage_concurrency"), s.value("tokperf_client_requests_in_flight")
		if (c != 2 && c != 6) || in < 0 || in > c {
			t.Errorf("poll %d: %v in flight at concurrency %v", i, in, c)
		}
		if in > 0 && n < len(recs) {
			busy[c]++
		}
	}
	if busy[2] == 0 || busy[6] == 0 {
		t.Errorf("polls that saw a level under way, by level: %v; want some at each of 2 and 6 (%d polls)", busy, len(polls))
	}
}

func sum(m map[string]float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v
	}
	return s
}

// measured are the result file's measured records, in the order written.
func measured(t *testing.T, path string) []record.Record {
	t.Helper()
	r, c, err := results.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []record.Record
	for r.Next() {
		if rec := r.Record(); !rec.Warmup {
			out = append(out, rec)
		}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	return out
}

// figures are what the live output should say of some records, counted
// here from the records by docs/METRICS.md's definitions.
type figures struct {
	byStatus        map[string]float64
	errs, tokens    float64
	ttftN, itlN     uint64
	ttftSum, itlSum float64
	ttfts           []float64 // seconds
}

func liveFigures(recs []record.Record) figures {
	f := figures{byStatus: map[string]float64{}}
	for i := range recs {
		r := &recs[i]
		f.byStatus[string(r.Status)]++
		if !r.OK() {
			if r.Status != record.StatusCancelled {
				f.errs++
			}
			continue
		}
		f.tokens += float64(r.OutputTokens)
		if ttft, ok := r.TTFT(); ok {
			f.ttftN++
			f.ttftSum += ttft.Seconds()
			f.ttfts = append(f.ttfts, ttft.Seconds())
		}
		for k := 1; k < len(r.Chunks); k++ {
			f.itlN += uint64(r.Chunks[k].Tokens)
			f.itlSum += (r.Chunks[k].At - r.Chunks[k-1].At).Seconds()
		}
	}
	return f
}

func checkScrape(t *testing.T, i int, s scrape, want figures) {
	t.Helper()
	got := s.statuses()
	if len(got) != len(want.byStatus) {
		t.Errorf("scrape %d: statuses %v, the records' %v", i, got, want.byStatus)
	}
	for st, n := range want.byStatus {
		if got[st] != n {
			t.Errorf("scrape %d: %v requests %s, the records' %v", i, got[st], st, n)
		}
	}
	if e, tok := s.value("tokperf_client_errors_total"), s.value("tokperf_client_output_tokens_total"); e != want.errs || tok != want.tokens {
		t.Errorf("scrape %d: %v errors and %v output tokens, the records' %v and %v", i, e, tok, want.errs, want.tokens)
	}
	ttft, itl := s.hist("tokperf_client_ttft_seconds"), s.hist("tokperf_client_itl_seconds")
	if ttft.GetSampleCount() != want.ttftN || !near(ttft.GetSampleSum(), want.ttftSum) {
		t.Errorf("scrape %d: TTFT count %d sum %v s, the records' %d and %v s", i, ttft.GetSampleCount(), ttft.GetSampleSum(), want.ttftN, want.ttftSum)
	}
	if len(ttft.Bucket) < 10 {
		t.Errorf("scrape %d: %d TTFT buckets", i, len(ttft.Bucket))
	}
	for _, b := range ttft.Bucket {
		n := uint64(0)
		for _, v := range want.ttfts {
			if v <= b.GetUpperBound() {
				n++
			}
		}
		if b.GetCumulativeCount() != n {
			t.Errorf("scrape %d: %d TTFTs ≤ %v s, the records' %d", i, b.GetCumulativeCount(), b.GetUpperBound(), n)
		}
	}
	if itl.GetSampleCount() != want.itlN || !near(itl.GetSampleSum(), want.itlSum) {
		t.Errorf("scrape %d: ITL count %d sum %v s, the records' %d and %v s", i, itl.GetSampleCount(), itl.GetSampleSum(), want.itlN, want.itlSum)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

// inFlight bounds the measured requests in flight at offset at: at least
// those sent before it and ended after it, at most those sent by it and
// not ended before it.
func inFlight(recs []record.Record, at time.Duration) (lo, hi int) {
	for _, r := range recs {
		if r.Sent < at && r.Done > at {
			lo++
		}
		if r.Sent <= at && r.Done >= at {
			hi++
		}
	}
	return lo, hi
}
