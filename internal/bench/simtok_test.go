package bench

import (
	"bufio"
	"context"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/tokenizer"
	"github.com/tokperf/tokperf/internal/workload"
)

// With a tokenizer on both sides (tokperf sim --tokenizer, or the embedded
// simulator given the client's), a Mooncake-format trace's prompts are
// exactly their input_length by it, and the simulator's prefix cache,
// keyed by the same tokens, hits the share of tokens trace stats computes
// from the file alone, within half a point; its /metrics hit rate is the
// share its answers' usage says, within a tenth of a point.
func TestTraceReplayInTokens(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"vllm", "sglang"} {
		t.Run(engine, func(t *testing.T) { traceReplayInTokens(t, engine) })
	}
}

func traceReplayInTokens(t *testing.T, engine string) {
	tok, err := tokenizer.Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	const block = 64
	tr := groupTrace(t, 200, 200, 4, block)
	want := tr.Stats(block)
	var page string
	dir := t.TempDir()
	var cached, prompt int
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		ctx, stop := context.WithCancel(context.Background())
		srv := sim.New(cacheProfileOf(t, engine), sim.Options{NoTrace: true, Tokenizer: tok})
		done := make(chan struct{})
		go func() { defer close(done); srv.Serve(ctx, n) }()
		env := &Env{Listen: func(string) (net.Listener, error) { return n, nil }, Dial: n.Dial}
		w, err := workload.New(workload.Options{Trace: tr, BlockSize: block, Seed: 1, IgnoreEOS: true, Tokenizer: tok})
		if err != nil {
			t.Fatal(err)
		}
		run, err := Sweep(context.Background(), SweepConfig{Command: "run", Target: Target{URL: "http://" + n.Addr().String()}, Prompts: w,
			Load: Load{Trace: tr, Timeout: time.Minute}, Out: filepath.Join(dir, "r.jsonl")}, env)
		if err != nil {
			t.Fatal(err)
		}
		if len(run.Stages) != 1 || run.Stages[0].OK != len(tr.Requests) {
			t.Fatalf("stages %+v", run.Figures())
		}
		st := run.Stages[0].Stage
		cached, prompt = int(st.CachedTokens), int(st.PromptTokens)
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
	usage := float64(cached) / float64(prompt)
	t.Logf("hit rate %.2f%% by /metrics, %.2f%% by usage (%d of %d); trace stats: %.2f%% of %d tokens", 100*got, 100*usage, cached, prompt, 100*want.TokenReuse(), want.InputTokens)
	if prompt != int(want.InputTokens) {
		t.Errorf("the answers' usage counts %d prompt tokens, the trace has %d", prompt, want.InputTokens)
	}
	if math.Abs(got-want.TokenReuse()) > 0.005 {
		t.Errorf("the simulator hit %.2f%%, trace stats says %.2f%%", 100*got, 100*want.TokenReuse())
	}
	if math.Abs(got-usage) > 0.001 {
		t.Errorf("/metrics says %.2f%%, the answers' usage %.2f%%", 100*got, 100*usage)
	}
}

// llamaConv is convProfile as llama.cpp with a prompt cache.
const llamaConv = `name: llamaconv
engine: llamacpp
model: conv
max_running: 64
kv_tokens: 10000000
chunked_prefill: 1000000
decode: {linear: {a_ms: 1, c_ms: 0}}
prefill: {fixed_ms: 0.5, per_token_us: 100}
prefix_cache: true
prefix_cache_block: 16
seed: 1
`

// Conversations against llama.cpp turn cache_prompt on unless the user
// chose (they exist to measure the cache), and the header says so: later
// turns then find their history cached. Single-turn runs keep it off, and
// the simulator, as llama.cpp, then caches nothing.
func TestLlamaConversationsCachePrompt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(file, []byte(llamaConv), 0o644); err != nil {
		t.Fatal(err)
	}
	in, _ := workload.ParseLengths("200")
	out, _ := workload.ParseLengths("40")
	for _, tc := range []struct {
		name       string
		turns      int
		target     Target
		want       string // Setup.CachePrompt
		wantCached bool
	}{
		{"conversations", 3, Target{SimProfile: file}, "conversations", true},
		{"conversations, --cache-prompt=false", 3, Target{SimProfile: file, CachePromptSet: true}, "", false},
		{"single turn", 0, Target{SimProfile: file}, "", false},
		{"single turn, --cache-prompt", 0, Target{SimProfile: file, CachePrompt: true, CachePromptSet: true}, "asked", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Single-turn prompts share a prefix, so that a cache would hit.
			w, err := workload.New(workload.Options{Input: in, Output: out, Turns: tc.turns, SharedPrefix: 100, Seed: 5, IgnoreEOS: true})
			if err != nil {
				t.Fatal(err)
			}
			var run *analyze.Run
			virtual(t, func(env *Env) {
				run, err = Sweep(context.Background(), SweepConfig{Command: "run", Target: tc.target, Prompts: w,
					Load: Load{Concurrency: []int{1}, Requests: 3, Warmup: 0, Timeout: time.Minute}, Out: filepath.Join(t.TempDir(), "r.jsonl")}, env)
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := run.Setup.CachePrompt; got != tc.want {
				t.Errorf("the header's cache_prompt is %q, want %q", got, tc.want)
			}
			if cached := run.Stages[0].CachedTokens; (cached > 0) != tc.wantCached {
				t.Errorf("%d prompt tokens cached, want some: %v", cached, tc.wantCached)
			}
		})
	}
}

// With the server's own answers in the history, each turn finds cached
// the previous turn's prompt and the answer it got, in whole blocks, as on
// vLLM: on the chat route (the template's tokens, the answer trimmed as a
// message holds it) and on the raw one (the prompt ends with "assistant:",
// the answer continues it), counted in o200k tokens on both sides.
func TestConversationTurnsHitTheAnswer(t *testing.T) {
	t.Parallel()
	for _, endpoint := range []string{"chat", "completions"} {
		t.Run(endpoint, func(t *testing.T) { conversationTurnsHitTheAnswer(t, endpoint) })
	}
}

func conversationTurnsHitTheAnswer(t *testing.T, endpoint string) {
	tok, err := tokenizer.Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(file, []byte(convProfile+"prefix_cache: true\nprefix_cache_block: 16\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, _ := workload.ParseLengths("120")
	out, _ := workload.ParseLengths("40")
	w, err := workload.New(workload.Options{Input: in, Output: out, Turns: 4, Seed: 5, IgnoreEOS: true, OwnAnswers: true, Tokenizer: tok})
	if err != nil {
		t.Fatal(err)
	}
	var run *analyze.Run
	virtual(t, func(env *Env) {
		run, err = Sweep(context.Background(), SweepConfig{Command: "run", Target: Target{SimProfile: file, Endpoint: endpoint, KeepText: true, Tokenizer: tok}, Prompts: w,
			Load: Load{Concurrency: []int{1}, Requests: 2, Warmup: 0, Timeout: time.Minute}, Out: filepath.Join(dir, "r.jsonl")}, env)
	})
	if err != nil {
		t.Fatal(err)
	}
	rd, f, err := results.Open(run.File)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	last := map[int]record.Record{}
	checked := 0
	for rd.Next() {
		rec := rd.Record()
		if rec.Warmup {
			continue
		}
		if prev, ok := last[rec.Conversation]; ok {
			answer := prev.Text // the raw prompt's "assistant:" goes on with it
			if endpoint == "chat" {
				answer = strings.TrimSpace(answer) // as a message holds it
			}
			want := min(prev.PromptTokens+tok.Count(answer), rec.PromptTokens-1) / 16 * 16
			if rec.CachedTokens != want {
				t.Errorf("conversation %d turn %d: %d of %d prompt tokens cached, want %d: the turn before's %d and its answer's %d", rec.Conversation, rec.Turn, rec.CachedTokens, rec.PromptTokens, want, prev.PromptTokens, tok.Count(answer))
			}
			checked++
		}
		last[rec.Conversation] = rec
	}
	if checked != 6 {
		t.Errorf("%d later turns checked, want 2 conversations' 3", checked)
	}
}
