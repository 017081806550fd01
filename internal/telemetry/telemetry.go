// Package telemetry reads an inference server's own Prometheus /metrics
// during a run — before, every second during, and after each stage — and
// says what the counters mean: a server that caps running requests, a
// queue, KV-cache pressure, preemptions, prefix-cache hits, speculative
// acceptance, and the server's token rate against the client's.
//
//	w := telemetry.Watch(ctx, client, backend.Under(url, "/metrics"), clock, time.Second)
//	samples := w.Stop()
package telemetry

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
)

// Parse reads Prometheus text exposition and sums each metric over its
// label sets. Histogram buckets are skipped (their _sum and _count kept),
// and so are values that are not finite.
func Parse(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ \t"); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if strings.HasPrefix(rest, "{") {
			j := strings.LastIndexByte(rest, '}')
			if j < 0 {
				return nil, fmt.Errorf("metrics line %d: unclosed label set", n)
			}
			rest = rest[j+1:]
		}
		fields := strings.Fields(rest)
		if name == "" || len(fields) == 0 {
			return nil, fmt.Errorf("metrics line %d: no value", n)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %d: value %q: %v", n, fields[0], err)
		}
		// A value that is not finite is no figure (and +Inf plus -Inf
		// would make the sum NaN).
		if strings.HasSuffix(name, "_bucket") || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		out[name] += v
	}
	return out, sc.Err()
}

func names(n engine.Metrics) []string {
	return []string{n.Running, n.Waiting, n.KV, n.Preemptions, n.Generated, n.Prompt, n.SpecDrafts, n.SpecDraftTokens,
		n.SpecAccepted, n.SpecLength, n.CacheHits, n.CacheQueries, n.CacheHitRate, engine.SimSteps, engine.SimLateSteps, engine.SimLatenessMax, engine.SimLateness, engine.SimStepSeconds, engine.SimBusySeconds, engine.SimHostDropped, engine.SimHostRetrans, engine.Resident}
}

// get fetches url (within 5 s) and returns its body, at most 16 MB, and
// what releases it; an answer other than 200 is an error naming the URL.
func get(ctx context.Context, client *http.Client, url string) (io.Reader, func(), error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	done := func() { resp.Body.Close(); cancel() }
	if resp.StatusCode != http.StatusOK {
		done()
		return nil, nil, fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	return io.LimitReader(resp.Body, 16<<20), done, nil
}

// Scrape fetches and parses /metrics once, keeping only the engine's names.
func Scrape(ctx context.Context, client *http.Client, url string, keep engine.Metrics) (map[string]float64, error) {
	body, done, err := get(ctx, client, url)
	if err != nil {
		return nil, err
	}
	defer done()
	all, err := Parse(body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, name := range names(keep) {
		if v, ok := all[name]; ok && name != "" {
			out[name] = v
		}
	}
	return out, nil
}

// Watcher scrapes in the background until stopped.
type Watcher struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	samples []record.ServerSample
}

// Watch scrapes now and then until Stop, which scrapes once more: every
// Fast for a stage's first FastFor, so a stage of a second or two still
// has samples inside it, then every every. Failed scrapes are skipped.
func Watch(ctx context.Context, client *http.Client, url string, names engine.Metrics, clock record.Clock, stage int, every time.Duration) *Watcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{cancel: cancel, done: make(chan struct{})}
	scrape := func(ctx context.Context) {
		if v, err := Scrape(ctx, client, url, names); err == nil {
			w.mu.Lock()
			w.samples = append(w.samples, record.ServerSample{Stage: stage, At: clock.Now(), Values: v})
			w.mu.Unlock()
		}
	}
	go func() {
		defer close(w.done)
		start := time.Now()
		scrape(ctx)
		for {
			wait := every
			if time.Since(start) < FastFor {
				wait = min(Fast, every)
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
				scrape(ctx)
			case <-ctx.Done():
				t.Stop()
				scrape(context.WithoutCancel(ctx))
				return
			}
		}
	}()
	return w
}

// Fast is the scrape interval of a stage's first FastFor.
var (
	Fast    = 250 * time.Millisecond
	FastFor = 10 * time.Second
)

// Take returns the samples scraped since the last Take (or the start),
// oldest first, and forgets them: a long stage keeps only its current
// slice's. Stop returns what is left.
func (w *Watcher) Take() []record.ServerSample {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.samples
	w.samples = nil
	return out
}

// Stop ends the watch and returns the samples, oldest first.
func (w *Watcher) Stop() []record.ServerSample {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples
}
