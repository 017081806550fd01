// Package telemetry reads an inference server's own Prometheus /metrics
// during a run — before, every second during, and after each stage — and
// says what the counters mean: a server that caps running requests, a
// queue, KV-cache pressure, preemptions, prefix-cache hits, speculative
// acceptance, and the server's token rate against the client's.
//
//	w := telemetry.Watch(ctx, client, url+"/metrics", clock, time.Second)
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

// Names are the metrics an engine exposes for each figure tokperf reads.
type Names struct {
	Running, Waiting, KV, Preemptions, Generated, Prompt  string
	SpecDrafts, SpecDraftTokens, SpecAccepted, SpecLength string
	CacheHits, CacheQueries, CacheHitRate                 string
}

// EngineNames maps an engine to its metric names.
var EngineNames = map[string]Names{
	"vllm": {Running: "vllm:num_requests_running", Waiting: "vllm:num_requests_waiting", KV: "vllm:kv_cache_usage_perc",
		Preemptions: "vllm:num_preemptions_total", Generated: "vllm:generation_tokens_total", Prompt: "vllm:prompt_tokens_total",
		SpecDrafts: "vllm:spec_decode_num_drafts_total", SpecDraftTokens: "vllm:spec_decode_num_draft_tokens_total",
		SpecAccepted: "vllm:spec_decode_num_accepted_tokens_total",
		CacheHits:    "vllm:prefix_cache_hits_total", CacheQueries: "vllm:prefix_cache_queries_total"},
	"sglang": {Running: "sglang:num_running_reqs", Waiting: "sglang:num_queue_reqs", KV: "sglang:token_usage",
		Generated: "sglang:generation_tokens_total", Prompt: "sglang:prompt_tokens_total",
		SpecLength: "sglang:spec_accept_length", CacheHitRate: "sglang:cache_hit_rate"},
	"llamacpp": {Running: "llamacpp:requests_processing", Waiting: "llamacpp:requests_deferred",
		Generated: "llamacpp:tokens_predicted_total", Prompt: "llamacpp:prompt_tokens_total"},
	"tgi": {Running: "tgi_batch_current_size", Waiting: "tgi_queue_size", Generated: "tgi_request_generated_tokens_total"},
}

func (n Names) all() []string {
	return []string{n.Running, n.Waiting, n.KV, n.Preemptions, n.Generated, n.Prompt, n.SpecDrafts, n.SpecDraftTokens,
		n.SpecAccepted, n.SpecLength, n.CacheHits, n.CacheQueries, n.CacheHitRate}
}

// Sample is one scrape, at an offset on the run's clock.
type Sample struct {
	Stage  int                `json:"stage"`
	At     time.Duration      `json:"at_ns"`
	Values map[string]float64 `json:"values"`
}

// Scrape fetches and parses /metrics once, keeping only the engine's names.
func Scrape(ctx context.Context, client *http.Client, url string, keep Names) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	all, err := Parse(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, name := range keep.all() {
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
	samples []Sample
}

// Watch scrapes now and then every interval until Stop, which scrapes once
// more. Failed scrapes are skipped.
func Watch(ctx context.Context, client *http.Client, url string, names Names, clock record.Clock, stage int, every time.Duration) *Watcher {
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{cancel: cancel, done: make(chan struct{})}
	scrape := func(ctx context.Context) {
		if v, err := Scrape(ctx, client, url, names); err == nil {
			w.mu.Lock()
			w.samples = append(w.samples, Sample{Stage: stage, At: clock.Now(), Values: v})
			w.mu.Unlock()
		}
	}
	go func() {
		defer close(w.done)
		scrape(ctx)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				scrape(ctx)
			case <-ctx.Done():
				scrape(context.WithoutCancel(ctx))
				return
			}
		}
	}()
	return w
}

// Stop ends the watch and returns the samples, oldest first.
func (w *Watcher) Stop() []Sample {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples
}

// Stage is what the server's counters say about one stage.
type Stage struct {
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
}

// Summarize reads the samples taken between from and to (the measured
// window of a stage; warm-up excluded).
func Summarize(all []Sample, n Names, from, to time.Duration) Stage {
	var samples []Sample
	for _, x := range all {
		if x.At >= from && x.At <= to {
			samples = append(samples, x)
		}
	}
	s := Stage{Samples: len(samples), CacheHit: math.NaN(), GenTokS: math.NaN(), PromptTokS: math.NaN()}
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
	if q, ok := delta(n.CacheQueries); ok && q > 0 {
		h, _ := delta(n.CacheHits)
		s.CacheHit = h / q
	} else if v, ok := last.Values[n.CacheHitRate]; ok {
		s.CacheHit = v
	}
	return s
}
