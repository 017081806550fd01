package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/report"
	"github.com/tokperf/tokperf/internal/sim"
)

// routeTools are the tools every request of routeTruth offers: the
// simulator's calls name one of them and fill its required properties.
const routeTools = `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city","unit"]}}},` +
	`{"type":"function","function":{"name":"search","parameters":{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}}}]`

// Every route that carries tool calls and reasoning (chat, the Responses
// API, the Messages API) counts what the simulator wrote: output, prompt
// (with the prefix cache's share), reasoning and tool-call tokens, the
// call's tool and its arguments, and TTFT and TTFO (the first token, and
// the first content or tool-call delta) at the times the simulator's
// trace says its chunks left. Half the turns call a tool, drawn per
// request; the system prompt is shared, so the prefix cache serves part
// of each prompt after the first (the Messages API counts it apart); with
// omit_usage the counts come from the events, one token
// each, as this profile streams them.
func TestRoutesMatchTheSimulator(t *testing.T) {
	t.Parallel()
	for _, route := range []string{"chat", "responses", "messages"} {
		for _, wire := range []string{"", "wire: {omit_usage: true}"} {
			t.Run(route+wire, func(t *testing.T) {
				t.Parallel()
				p, err := sim.ParseProfile("r.yaml", []byte(`name: agent
engine: vllm
max_running: 64
decode: {linear: {a_ms: 5, c_ms: 0.1}}
prefill: {fixed_ms: 2, per_token_us: 10}
reasoning: {tokens: 7}
tools: {probability: 0.5, arguments_tokens: 12}
prefix_cache: true
seed: 3
`+wire))
				if err != nil {
					t.Fatal(err)
				}
				recs, truth := routeRun(t, p, route, 24)
				calls := routeCheck(t, recs, truth, wire == "")
				routeFinish(t, route, recs)
				if calls < 4 || calls > 20 {
					t.Errorf("%d of 24 turns called a tool, the profile's probability 0.5", calls)
				}
				cached := 0
				for _, r := range recs {
					cached += r.CachedTokens
				}
				if wire == "" && cached == 0 {
					t.Errorf("no prompt token came from the prefix cache: the shared system prompt is 64 tokens")
				}
			})
		}
	}
}

// routeFinish holds each record's finish reason to its route's words
// for a call and for an answer cut at the max tokens (the profile has no
// EOS), and the stage's count of length-finished requests to the answers,
// its tool calls and their tokens to the records' (which routeCheck holds
// to the simulator's), as the report says them.
func routeFinish(t *testing.T, route string, recs []record.Record) {
	t.Helper()
	words := map[string][2]string{"chat": {"tool_calls", "length"}, "responses": {"completed", "max_output_tokens"}, "messages": {"tool_use", "max_tokens"}}[route]
	fold := analyze.NewFold(record.Setup{Endpoint: route}, "")
	answers := 0
	for i := range recs {
		want := words[0]
		if len(recs[i].ToolCalls) == 0 {
			want = words[1]
			answers++
		}
		if recs[i].FinishReason != want {
			t.Errorf("request %d: finish %q, want %q", recs[i].ID, recs[i].FinishReason, want)
		}
		fold.Add(&recs[i])
	}
	run := fold.Run()
	s := run.Stages[0].Stage
	if s.LengthFinished != answers {
		t.Errorf("%d requests counted as finished at the length, %d were", s.LengthFinished, answers)
	}
	tools := 0
	for _, r := range recs {
		tools += r.ToolTokens
	}
	var b strings.Builder
	report.Text(&b, run)
	line := fmt.Sprintf("%d of %d requests answered with a tool call, %d of %d output tokens in the calls", len(recs)-answers, len(recs), tools, s.OutputTokens)
	if s.ToolCalled != len(recs)-answers || s.ToolTokens != tools || !strings.Contains(b.String(), line) {
		t.Errorf("stage: %d calls, %d tool tokens; the records' %d, %d; the report lacks %q:\n%s", s.ToolCalled, s.ToolTokens, len(recs)-answers, tools, line, b.String())
	}
}

// routeRun sends n requests with tools, 8 at a time, over an in-memory
// network in virtual time, and returns the records and the simulator's
// trace by request id.
func routeRun(t *testing.T, p *sim.Profile, route string, n int) ([]record.Record, map[string]sim.TraceRequest) {
	t.Helper()
	recs := make([]record.Record, n)
	truth := map[string]sim.TraceRequest{}
	synctest.Test(t, func(t *testing.T) {
		nw := memnet.New()
		ctx, stop := context.WithCancel(context.Background())
		srv := sim.New(p, sim.Options{})
		done := make(chan struct{})
		go func() { defer close(done); srv.Serve(ctx, nw) }()
		b, err := backend.New(backend.Config{URL: "http://" + nw.Addr().String(), Endpoint: route, Model: "agent", Conns: 8, Dial: nw.Dial})
		if err != nil {
			t.Fatal(err)
		}
		clock := record.NewClock()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for i := range n {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				req := record.Request{Messages: []record.Message{{Role: "system", Content: strings.Repeat("You are a terse agent that calls tools. ", 8)}, {Role: "user", Content: fmt.Sprintf("request %d: what is the weather in town %d", i, i)}},
					Tools: json.RawMessage(routeTools), MaxTokens: 40, Temperature: 0.7, Seed: int64(i + 1)}
				recs[i] = record.New(i)
				b.Do(context.Background(), clock, req, &recs[i])
			})
		}
		wg.Wait()
		b.Close()
		time.Sleep(time.Second) // the handlers file their traces
		for _, tr := range srv.Trace() {
			truth[tr.RequestID] = tr
		}
		stop()
		<-done
	})
	return recs, truth
}

// routeCheck holds each record to its trace and returns how many turns
// called a tool.
func routeCheck(t *testing.T, recs []record.Record, truth map[string]sim.TraceRequest, usage bool) int {
	t.Helper()
	calls := 0
	for _, rec := range recs {
		tr, ok := truth[fmt.Sprintf("tokperf-%d", rec.ID)]
		if !ok || rec.Status != record.StatusOK {
			t.Fatalf("request %d: %s %s, in the trace: %v", rec.ID, rec.Status, rec.Error, ok)
		}
		reasoning := min(7, tr.OutputTokens)
		wantSource := record.SourceUsage
		if !usage {
			wantSource = record.SourceChunks
		}
		if rec.OutputTokens != tr.OutputTokens || rec.OutputSource != wantSource || rec.ReasoningTokens != reasoning || rec.ToolTokens != tr.ToolTokens {
			t.Errorf("request %d: output %d (%s), reasoning %d, tool %d; the simulator wrote %d, %d, %d", rec.ID, rec.OutputTokens, rec.OutputSource,
				rec.ReasoningTokens, rec.ToolTokens, tr.OutputTokens, reasoning, tr.ToolTokens)
		}
		if usage && rec.PromptTokens != tr.PromptTokens {
			t.Errorf("request %d: prompt %d, the simulator's %d", rec.ID, rec.PromptTokens, tr.PromptTokens)
		}
		routeCall(t, rec, tr)
		if tr.Tool != "" {
			calls++
		}
		first, cum := -1, 0
		for i, c := range tr.Chunks {
			if cum += c.Tokens; cum > reasoning && first < 0 {
				first = i
			}
		}
		ttft, _ := rec.TTFT()
		ttfo, ok := rec.TTFO()
		if !ok || absDur(ttft-tr.Chunks[0].At.Sub(tr.Arrived)) > time.Millisecond || absDur(ttfo-tr.Chunks[first].At.Sub(tr.Arrived)) > time.Millisecond {
			t.Errorf("request %d: TTFT %v, TTFO %v; the simulator wrote the first token at %v and the first past the reasoning at %v",
				rec.ID, ttft, ttfo, tr.Chunks[0].At.Sub(tr.Arrived), tr.Chunks[first].At.Sub(tr.Arrived))
		}
	}
	return calls
}

// routeCall holds a record's tool call to the simulator's: the tool it
// named, arguments that parse and hold the tool's required properties.
func routeCall(t *testing.T, rec record.Record, tr sim.TraceRequest) {
	t.Helper()
	if tr.Tool == "" {
		if len(rec.ToolCalls) != 0 {
			t.Errorf("request %d: calls %+v, the simulator made none", rec.ID, rec.ToolCalls)
		}
		return
	}
	if len(rec.ToolCalls) != 1 || rec.ToolCalls[0].Name != tr.Tool || rec.ToolCalls[0].ID == "" {
		t.Fatalf("request %d: calls %+v, the simulator called %s", rec.ID, rec.ToolCalls, tr.Tool)
	}
	var args map[string]string
	if err := json.Unmarshal([]byte(rec.ToolCalls[0].Arguments), &args); err != nil {
		t.Fatalf("request %d: arguments %q: %v", rec.ID, rec.ToolCalls[0].Arguments, err)
	}
	want := map[string][]string{"get_weather": {"city", "unit"}, "search": {"q"}}[tr.Tool]
	for _, k := range want {
		if _, ok := args[k]; !ok {
			t.Errorf("request %d: arguments %v lack %q", rec.ID, args, k)
		}
	}
}
