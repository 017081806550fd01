package bench

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/workload"
)

// cacheProfile is a vLLM-like simulator with a prefix cache of 16-token
// blocks, large enough to forget nothing.
func cacheProfile(t *testing.T) *sim.Profile { return cacheProfileOf(t, "vllm") }

// cacheProfileOf is cacheProfile imitating engine.
func cacheProfileOf(t *testing.T, engine string) *sim.Profile {
	t.Helper()
	p, err := sim.ParseProfile("cache.yaml", []byte(`name: cache
engine: `+engine+`
model: cache
max_running: 4096
kv_tokens: 100000000
chunked_prefill: 1000000
decode: {linear: {a_ms: 1, c_ms: 0}}
prefill: {fixed_ms: 0.2, per_token_us: 2}
prefix_cache: true
prefix_cache_block: 16
seed: 1
`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// groupTrace is n requests at rate per second: each starts with one of
// groups shared system prompts of two blocks, then a block shared with the
// request two before it of the same group (a conversation's history) or
// one of its own, then a block of its own and a partial tail.
func groupTrace(t *testing.T, n int, rate float64, groups, block int) *workload.Trace {
	var b strings.Builder
	next := int64(1000)
	for i := range n {
		g := int64(i % groups)
		hist := next
		if i >= 2*groups {
			hist = int64(10000 + i - 2*groups)
		}
		next++
		fmt.Fprintf(&b, `{"timestamp": %g, "input_length": %d, "output_length": 4, "hash_ids": [%d, %d, %d, %d, %d]}`+"\n",
			float64(i)*1000/rate, 4*block+block/2, 2*g, 2*g+1, hist, 10000+i, next)
		next++
	}
	tr, err := workload.ReadTrace(strings.NewReader(b.String()), "groups.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// metric reads one counter from a Prometheus page.
func metric(t *testing.T, page, name string) float64 {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(page))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && strings.HasPrefix(f[0], name) && (len(f[0]) == len(name) || f[0][len(name)] == '{') {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}

// A trace replays at its timestamps, 200 requests/s here, each send within
// 2 ms of its schedule; the simulator's prefix cache, asked through its
// /metrics as any vLLM's, hits the share of tokens trace stats computed
// from the file alone.
func TestTraceReplay(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"vllm", "sglang"} {
		t.Run(engine, func(t *testing.T) { traceReplay(t, engine) })
	}
}

func traceReplay(t *testing.T, engine string) {
	const block = 64
	tr := groupTrace(t, 400, 200, 4, block)
	want := tr.Stats(block)
	if want.TokenReuse() < 0.3 {
		t.Fatalf("the trace reuses %.0f%%: too little to test", 100*want.TokenReuse())
	}
	out := filepath.Join(t.TempDir(), "r.jsonl")
	var page string
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		ctx, stop := context.WithCancel(context.Background())
		srv := sim.New(cacheProfileOf(t, engine), sim.Options{NoTrace: true})
		done := make(chan struct{})
		go func() { defer close(done); srv.Serve(ctx, n) }()
		env := &Env{Listen: func(string) (net.Listener, error) { return n, nil }, Dial: n.Dial}
		w, err := workload.New(workload.Options{Trace: tr, BlockSize: block, Seed: 1, IgnoreEOS: true})
		if err != nil {
			t.Fatal(err)
		}
		run, err := Sweep(context.Background(), SweepConfig{Command: "run", Target: Target{URL: "http://" + n.Addr().String()}, Prompts: w,
			Load: Load{Trace: tr, Timeout: time.Minute}, Out: out}, env)
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Stages) != 1 || run.Stages[0].OK != 400 {
			t.Fatalf("stages %+v", run.Figures())
		}
		c := &http.Client{Transport: &http.Transport{DialContext: n.Dial}}
		resp, err := c.Get("http://" + n.Addr().String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&sb)
		resp.Body.Close()
		page = sb.String()
		stop()
		<-done
	})
	rd, f, err := results.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []record.Record
	for rd.Next() {
		recs = append(recs, rd.Record())
	}
	if len(recs) != 400 {
		t.Fatalf("%d records", len(recs))
	}
	worst := time.Duration(0)
	for _, r := range recs {
		at := tr.Requests[r.ID].At
		if r.Scheduled != recs[0].Scheduled-tr.Requests[recs[0].ID].At+at {
			t.Fatalf("request %d scheduled at %v, the trace says %v from the start", r.ID, r.Scheduled, at)
		}
		worst = max(worst, r.Sent-r.Scheduled)
		if r.AskedPromptTokens != tr.Requests[r.ID].Input || r.PromptTokens != tr.Requests[r.ID].Input {
			t.Fatalf("request %d: %d prompt tokens asked, %d counted, want %d", r.ID, r.AskedPromptTokens, r.PromptTokens, tr.Requests[r.ID].Input)
		}
	}
	if worst > 2*time.Millisecond {
		t.Errorf("the latest send was %v after its timestamp", worst)
	}
	// Each engine's own names: vLLM counts tokens, SGLang gives a rate.
	var got float64
	if engine == "sglang" {
		got = metric(t, page, "sglang:cache_hit_rate")
	} else {
		hits, queries := metric(t, page, "vllm:prefix_cache_hits_total"), metric(t, page, "vllm:prefix_cache_queries_total")
		if got = hits / queries; queries != float64(want.InputTokens) {
			t.Errorf("the simulator was asked %.0f prompt tokens, the trace has %d", queries, want.InputTokens)
		}
	}
	// The client's view, from the usage counts of every request.
	cached, prompt := 0, 0
	for _, r := range recs {
		cached, prompt = cached+r.CachedTokens, prompt+r.PromptTokens
	}
	t.Logf("hit rate %.2f%% by /metrics, %.2f%% by usage; trace stats: %.2f%% of tokens, %.2f%% of blocks", 100*got, 100*float64(cached)/float64(prompt), 100*want.TokenReuse(), 100*want.PrefixReuse())
	if math.Abs(got-want.TokenReuse()) > 0.01 || math.Abs(float64(cached)/float64(prompt)-want.TokenReuse()) > 0.01 {
		t.Errorf("the simulator hit %.2f%% (usage: %d of %d), trace stats says %.2f%%", 100*got, cached, prompt, 100*want.TokenReuse())
	}
}

// Prefix groups against the simulator's prefix cache: every request after
// the first of its group finds its group's prefix cached, whole blocks of it.
func TestPrefixGroupsHitTheCache(t *testing.T) {
	t.Parallel()
	const n, groups, shared, input = 20, 4, 64, 100
	var page string
	synctest.Test(t, func(t *testing.T) {
		mn := memnet.New()
		ctx, stop := context.WithCancel(context.Background())
		srv := sim.New(cacheProfile(t), sim.Options{NoTrace: true})
		done := make(chan struct{})
		go func() { defer close(done); srv.Serve(ctx, mn) }()
		env := &Env{Listen: func(string) (net.Listener, error) { return mn, nil }, Dial: mn.Dial}
		_, err := Sweep(context.Background(), SweepConfig{Command: "run", Target: Target{URL: "http://" + mn.Addr().String()},
			Workload: workload.Synthetic{InputTokens: input, OutputTokens: 4, IgnoreEOS: true, Seed: 3, SharedPrefix: shared, PrefixGroups: groups},
			Load:     Load{Concurrency: []int{1}, Requests: n, Warmup: 0, Timeout: time.Minute}, Out: filepath.Join(t.TempDir(), "r.jsonl")}, env)
		if err != nil {
			t.Fatal(err)
		}
		c := &http.Client{Transport: &http.Transport{DialContext: mn.Dial}}
		resp, err := c.Get("http://" + mn.Addr().String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		var sb strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&sb)
		resp.Body.Close()
		page = sb.String()
		stop()
		<-done
	})
	hits, queries := metric(t, page, "vllm:prefix_cache_hits_total"), metric(t, page, "vllm:prefix_cache_queries_total")
	if want := float64((n - groups) * shared); hits != want || queries != n*input {
		t.Errorf("%.0f of %.0f prompt tokens hit, want %.0f of %d", hits, queries, want, n*input)
	}
}

// A trace's stage: its timestamps at the speedup, cut to the first
// --requests or to those due within --duration, its rate theirs.
func TestTracePlan(t *testing.T) {
	t.Parallel()
	tr := groupTrace(t, 10, 100, 2, 16) // every 10 ms
	p := Load{Trace: tr, Speedup: 2}.tracePlan()
	if len(p.At) != 10 || p.At[9] != 45*time.Millisecond || p.Rate != 200 || p.Warmup != 0 {
		t.Errorf("speedup 2: %d arrivals, the last at %v, rate %g", len(p.At), p.At[9], p.Rate)
	}
	if p := (Load{Trace: tr, Requests: 4}).tracePlan(); len(p.At) != 4 || p.Requests != 4 {
		t.Errorf("--requests 4: %d arrivals", len(p.At))
	}
	if p := (Load{Trace: tr, Duration: 35 * time.Millisecond}).tracePlan(); len(p.At) != 4 {
		t.Errorf("--duration 35ms: %d arrivals, want those at 0, 10, 20, 30 ms", len(p.At))
	}
	if p := (Load{Trace: tr, Concurrency: []int{3}, CapSet: true}).tracePlan(); p.Concurrency != 3 {
		t.Errorf("-c 3: cap %d", p.Concurrency)
	}
}
