package bench

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/workload"
)

// convProfile is a vLLM-like simulator whose prefill is slow (100 µs a
// token) beside its 1 ms steps, with or without a prefix cache.
const convProfile = `name: conv
engine: vllm
model: conv
max_running: 64
kv_tokens: 10000000
chunked_prefill: 1000000
decode: {linear: {a_ms: 1, c_ms: 0}}
prefill: {fixed_ms: 0.5, per_token_us: 100}
seed: 1
`

// talkRun runs 3 conversations of 4 turns, one at a time, against the
// profile, and returns the run.
func talkRun(t *testing.T, profile string) *analyze.Run {
	t.Helper()
	run, _ := talkRunWith(t, profile, false)
	return run
}

// talkRunWith is talkRun, the history the server's own answers when own,
// and returns the workload too.
func talkRunWith(t *testing.T, profile string, own bool) (*analyze.Run, *workload.Workload) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(file, []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	in, _ := workload.ParseLengths("200")
	out, _ := workload.ParseLengths("40")
	w, err := workload.New(workload.Options{Input: in, Output: out, Turns: 4, Seed: 5, IgnoreEOS: true, OwnAnswers: own})
	if err != nil {
		t.Fatal(err)
	}
	var run *analyze.Run
	virtual(t, func(env *Env) {
		run, err = Sweep(context.Background(), SweepConfig{Command: "run", Target: Target{SimProfile: file, Endpoint: "completions", KeepText: own}, Prompts: w,
			Load: Load{Concurrency: []int{1}, Requests: 3, Warmup: 0, Timeout: time.Minute, Think: 2 * time.Second}, Out: filepath.Join(dir, "r.jsonl")}, env)
	})
	if err != nil {
		t.Fatal(err)
	}
	// The result file folds into the same figures, turn by turn.
	saved, err := ReadRun(context.Background(), run.File, false)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(run.Stages[0].Turns, saved.Stages[0].Turns); d != "" {
		t.Errorf("the file's turns differ from the live run's (-live +file):\n%s", d)
	}
	return run, w
}

// With own answers the k-th request carries the whole history as the
// server wrote it: rebuilt from the answers in the result file, each
// turn's prompt is as many words as the simulator counted in it.
func TestConversationOwnAnswers(t *testing.T) {
	t.Parallel()
	run, w := talkRunWith(t, convProfile, true)
	rd, f, err := results.Open(run.File)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	turns := map[int][]record.Record{}
	for rd.Next() {
		if rec := rd.Record(); !rec.Warmup {
			turns[rec.Conversation] = append(turns[rec.Conversation], rec)
		}
	}
	if len(turns) != 3 {
		t.Fatalf("%d conversations", len(turns))
	}
	for c, recs := range turns {
		var answers []string
		for k, rec := range recs {
			if rec.Turn != k+1 || rec.Text == "" {
				t.Fatalf("conversation %d: record %d is turn %d, text %q", c, k, rec.Turn, rec.Text)
			}
			req := w.Turn(c, k, answers)
			if n := len(strings.Fields(req.Prompt)); n != rec.PromptTokens {
				t.Errorf("conversation %d turn %d: the server counted %d prompt tokens, the history with its answers has %d words", c, k+1, rec.PromptTokens, n)
			}
			if k > 0 && !strings.Contains(req.Prompt, "assistant: "+strings.TrimSpace(answers[k-1])) {
				t.Errorf("conversation %d turn %d: the last answer is not in the history", c, k+1)
			}
			answers = append(answers, rec.Text)
		}
	}
}

// Conversations replayed turn by turn: each turn's prompt holds the whole
// history, so it grows by a reply and a user message a turn; with the
// simulator's prefix cache the history before is cached, and each turn's
// TTFT falls, against the same run without a cache, by the prefill of the
// cached tokens (the profile's 100 µs a token).
func TestConversationTTFTByTurn(t *testing.T) {
	t.Parallel()
	cold := talkRun(t, convProfile)
	warm := talkRun(t, convProfile+"prefix_cache: true\nprefix_cache_block: 16\n")
	ct, wt := cold.Stages[0].Turns, warm.Stages[0].Turns
	if len(ct) != 4 || len(wt) != 4 || ct[0].OK != 3 || wt[3].OK != 3 {
		t.Fatalf("turns: %+v / %+v", ct, wt)
	}
	p, err := sim.ParseProfile("p.yaml", []byte(convProfile))
	if err != nil {
		t.Fatal(err)
	}
	perToken := p.Prefill.PerTokenUs / 1000 // ms
	for k := range 4 {
		c, w := ct[k], wt[k]
		if c.MeanPromptTokens != w.MeanPromptTokens {
			t.Errorf("turn %d: %.0f prompt tokens cold, %.0f warm: not the same conversations", k+1, c.MeanPromptTokens, w.MeanPromptTokens)
		}
		// A turn adds a reply and a user message as long as the first turn's.
		if k > 0 && c.MeanPromptTokens < ct[k-1].MeanPromptTokens+ct[0].MeanPromptTokens {
			t.Errorf("turn %d: %.0f prompt tokens, the turn before %.0f: the history did not grow by a reply and a message", k+1, c.MeanPromptTokens, ct[k-1].MeanPromptTokens)
		}
		fall := c.TTFT.Mean - w.TTFT.Mean
		predicted := perToken * w.MeanCachedTokens
		t.Logf("turn %d: prompt %.0f, cached %.0f; TTFT %.2f ms cold, %.2f warm: fell %.2f ms, predicted %.2f", k+1, c.MeanPromptTokens, w.MeanCachedTokens, c.TTFT.Mean, w.TTFT.Mean, fall, predicted)
		if k == 0 && w.MeanCachedTokens != 0 {
			t.Errorf("turn 1 had %.0f cached tokens: conversations share a prefix", w.MeanCachedTokens)
		}
		if k > 0 && w.MeanCachedTokens < ct[k-1].MeanPromptTokens-16 {
			t.Errorf("turn %d: %.0f cached of the %.0f the turn before sent", k+1, w.MeanCachedTokens, ct[k-1].MeanPromptTokens)
		}
		if math.Abs(fall-predicted) > 0.02*predicted+1 {
			t.Errorf("turn %d: TTFT fell %.2f ms, the profile predicts %.2f", k+1, fall, predicted)
		}
	}
}
