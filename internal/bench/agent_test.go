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
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/summary"
	"github.com/tokperf/tokperf/internal/workload"
)

var _ runner.Sessions = workload.Sessions{}

// agentRun runs n generated agent sessions of shape, c at a time, on the
// chat route of a simulator with a prefix cache, in virtual time.
func agentRun(t *testing.T, shape string, c, n int) (*analyze.Run, *workload.Workload) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(file, []byte(convProfile+"prefix_cache: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, _ := workload.ParseLengths("30:lognormal:0.5")
	out, _ := workload.ParseLengths("20-60")
	a, err := workload.ParseAgent(shape)
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.New(workload.Options{Input: in, Output: out, Agent: &a, Seed: 9, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	var run *analyze.Run
	virtual(t, func(env *Env) {
		run, err = Sweep(context.Background(), SweepConfig{Command: "run", Target: Target{SimProfile: file, Endpoint: "chat"}, Prompts: w,
			Load: Load{Concurrency: []int{c}, Requests: n, Warmup: 0, Timeout: time.Minute}, Out: filepath.Join(dir, "r.jsonl")}, env)
	})
	if err != nil {
		t.Fatal(err)
	}
	return run, w
}

// truth is what the workload's shape and the simulator's counting say a
// session is: its turns (its sub-agents' too), the prompt tokens the
// simulator's chat template counts (3, and 4 a message around its words),
// the output asked for (ignore_eos), and the tool time it was to wait.
type truth struct {
	turns, in, out int
	tool           time.Duration
	forks, tools   int
}

func sessionTruth(w *workload.Workload, s int) truth {
	var t truth
	a := workload.Sessions{Workload: w}
	for k := range w.Turns(s) {
		req := w.Turn(s, k, nil)
		t.turns++
		t.in += 3
		for _, m := range req.Messages {
			t.in += 4 + len(strings.Fields(m.Content))
		}
		t.out += req.MaxTokens
		tool, _, agents := a.After(s, k)
		t.tool += tool
		if tool > 0 {
			t.tools++
		}
		if len(agents) > 0 {
			t.forks++
		}
		for _, id := range agents {
			sub := sessionTruth(w, id)
			t.turns, t.in, t.out = t.turns+sub.turns, t.in+sub.in, t.out+sub.out
		}
	}
	return t
}

// Generated agent sessions on the simulator: every session's turns,
// tokens and tool waits are the shape's and the simulator's own, each
// turn is sent exactly its tool's time (or its sub-agents' end) after the
// last ended, and the stage's session figures are their means.
func TestAgentSessionsEqualTruth(t *testing.T) {
	t.Parallel()
	const n = 8
	run, w := agentRun(t, "turns=5:lognormal:0.4,tools=0.7,tool-time=2s:lognormal:0.5,result=40:lognormal:0.5,fork=0.4,agents=2,system=300", 3, n)
	rd, f, err := results.Open(run.File)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byConv := map[int][]record.Record{}
	roots := map[int]bool{}
	for rd.Next() {
		rec := rd.Record()
		if !rec.OK() {
			t.Fatalf("request %d: %s %s", rec.ID, rec.Status, rec.Error)
		}
		byConv[rec.Conversation] = append(byConv[rec.Conversation], rec)
		roots[summary.Root(&rec)] = true
	}
	if len(roots) != n {
		t.Fatalf("%d sessions, want %d", len(roots), n)
	}
	a := workload.Sessions{Workload: w}
	var want truth
	var gotTurns int
	for s, recs := range byConv {
		for k, rec := range recs {
			gotTurns++
			req := w.Turn(s, k, nil)
			if rec.Turn != k+1 || rec.OutputTokens != req.MaxTokens {
				t.Errorf("session %d record %d: turn %d, %d output tokens; want turn %d, %d", s, k, rec.Turn, rec.OutputTokens, k+1, req.MaxTokens)
			}
			if k == 0 {
				continue
			}
			prev := recs[k-1]
			tool, _, agents := a.After(s, k-1)
			if rec.ToolWait != tool {
				t.Errorf("session %d turn %d: waited %v for its tool, the shape says %v", s, k+1, rec.ToolWait, tool)
			}
			end := prev.Done
			for _, id := range agents {
				for _, sub := range byConv[id] {
					end = max(end, sub.Done)
				}
			}
			if rec.AgentWait != end-prev.Done || rec.Scheduled != prev.Done+tool+rec.AgentWait {
				t.Errorf("session %d turn %d: scheduled %v after the last turn's end, sub-agents %v; want %v and %v",
					s, k+1, rec.Scheduled-prev.Done, rec.AgentWait, tool+end-prev.Done, end-prev.Done)
			}
		}
	}
	for s := range roots {
		st := sessionTruth(w, s)
		want.turns, want.in, want.out, want.tool = want.turns+st.turns, want.in+st.in, want.out+st.out, want.tool+st.tool
		want.forks, want.tools = want.forks+st.forks, want.tools+st.tools
		var in int
		for _, recs := range byConv {
			for _, rec := range recs {
				if summary.Root(&rec) == s {
					in += rec.PromptTokens
				}
			}
		}
		if in != st.in {
			t.Errorf("session %d: the simulator counted %d prompt tokens, the shape's messages hold %d", s, in, st.in)
		}
	}
	if want.forks == 0 || want.tools == 0 || gotTurns != want.turns {
		t.Fatalf("%d turns sent, the shapes have %d (%d tool calls, %d forks): the test wants both", gotTurns, want.turns, want.tools, want.forks)
	}
	got := run.Stages[0].Sessions
	if got == nil {
		t.Fatal("no session figures")
	}
	near := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s: %g, want %g", name, got, want)
		}
	}
	if got.Sessions != n || got.Failed != 0 {
		t.Errorf("%d sessions, %d failed; want %d and 0", got.Sessions, got.Failed, n)
	}
	near("mean turns", got.Turns, float64(want.turns)/n)
	near("mean input tokens", got.InputTokens, float64(want.in)/n)
	near("mean output tokens", got.OutputTokens, float64(want.out)/n)
	near("mean tool s", got.ToolS, want.tool.Seconds()/n)
	// With no think time a session's latency is its time in the model,
	// in tools and waiting on sub-agents, nothing else.
	near("mean latency s", got.Latency.Mean/1e3, got.ModelS+got.ToolS+got.AgentS)
	if got.CachedTokens <= 0 || got.LaterTTFT.N == 0 || got.FirstTTFT.N == 0 {
		t.Errorf("cached %g tokens a session, TTFT of %d first and %d later turns: want a history served from the cache", got.CachedTokens, got.FirstTTFT.N, got.LaterTTFT.N)
	}
	saved, err := ReadRun(context.Background(), run.File, false)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(run.Stages[0].Sessions, saved.Stages[0].Sessions); d != "" {
		t.Errorf("the file's session figures differ from the live run's (-live +file):\n%s", d)
	}
}

// A replayed agent trace on the simulator: every session's turns, tokens
// and waits are the trace's (its sub-agents' too), and with a prefix
// cache that forgets nothing the share of prompt tokens it served is the
// trace's ceiling, within the simulator's 16-token blocks and its chat
// template's tokens.
func TestAgentTraceReplayEqualsTruth(t *testing.T) {
	t.Parallel()
	tr, err := workload.LoadAgentTrace(filepath.Join("..", "workload", "testdata", "agent", "weka.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.New(workload.Options{AgentTrace: tr, Seed: 4, IgnoreEOS: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(file, []byte(convProfile+"prefix_cache: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var run *analyze.Run
	virtual(t, func(env *Env) {
		run, err = Sweep(context.Background(), SweepConfig{Command: "run", Target: Target{SimProfile: file, Endpoint: "chat"}, Prompts: w,
			Load: Load{Concurrency: []int{3}, Requests: tr.Top, Warmup: 0, Timeout: time.Minute}, Out: filepath.Join(dir, "r.jsonl")}, env)
	})
	if err != nil {
		t.Fatal(err)
	}
	rd, f, err := results.Open(run.File)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	byConv := map[int][]record.Record{}
	for rd.Next() {
		rec := rd.Record()
		byConv[rec.Conversation] = append(byConv[rec.Conversation], rec)
	}
	a := workload.Sessions{Workload: w}
	turns := 0
	for s, recs := range byConv {
		if len(recs) != w.Turns(s) {
			t.Errorf("session %d: %d turns sent, the trace has %d", s, len(recs), w.Turns(s))
		}
		for k, rec := range recs {
			turns++
			req := w.Turn(s, k, nil)
			if want := 7 + len(strings.Fields(req.Prompt)); rec.PromptTokens != want || rec.OutputTokens != req.MaxTokens {
				t.Errorf("session %d turn %d: %d prompt and %d output tokens; the trace's turn is %d and %d", s, k+1, rec.PromptTokens, rec.OutputTokens, want, req.MaxTokens)
			}
			if k == 0 {
				continue
			}
			tool, think, _ := a.After(s, k-1)
			if got := rec.Scheduled - recs[k-1].Done - rec.AgentWait; rec.ToolWait != tool || got != tool+think {
				t.Errorf("session %d turn %d: waited %v (tool %v) after the last turn, the trace says %v (tool %v)", s, k+1, got, rec.ToolWait, tool+think, tool)
			}
		}
	}
	st := tr.Stats(0)
	if turns != st.Turns {
		t.Errorf("%d turns sent, the trace has %d", turns, st.Turns)
	}
	stage := run.Stages[0]
	hit, ceiling := float64(stage.CachedTokens)/float64(stage.PromptTokens), st.Prefix.TokenReuse()
	t.Logf("prefix cache hit %.3f, the trace's ceiling %.3f", hit, ceiling)
	if math.Abs(hit-ceiling) > 0.05 {
		t.Errorf("the simulator's cache served %.1f%% of prompt tokens, the trace's ceiling is %.1f%%", 100*hit, 100*ceiling)
	}
	if run.Setup.Workload.CacheCeiling != ceiling {
		t.Errorf("the header's ceiling is %g, want %g", run.Setup.Workload.CacheCeiling, ceiling)
	}
}
