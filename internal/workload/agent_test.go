package workload

import (
	"bytes"
	"strings"
	"testing"
)

// A shape reads back from its own spelling, keys left out keep their
// defaults, and a bad key or value names itself.
func TestParseAgent(t *testing.T) {
	t.Parallel()
	def, err := ParseAgent("default")
	if err != nil {
		t.Fatal(err)
	}
	a, err := ParseAgent("tools=0.5,tool-time=200ms-3s,bust")
	if err != nil {
		t.Fatal(err)
	}
	if a.ToolShare != 0.5 || !a.Bust || a.Turns.String() != def.Turns.String() || a.System != def.System || a.ToolMs.String() != "200-3000" {
		t.Errorf("shape %s; want the default's with tools=0.5, tool-time 200-3000 ms, bust", a)
	}
	again, err := ParseAgent(a.String())
	if err != nil || again.String() != a.String() {
		t.Errorf("%s read back as %s (%v)", a, again, err)
	}
	for spec, want := range map[string]string{
		"":                   "want KEY=VALUE",
		"turns=0-x":          "turns: ",
		"fork=1.5":           `fork: "1.5": want a share from 0 to 1`,
		"agents=0":           "agents: 0 sub-agents: want 1 to 64",
		"tool-time=0s":       `tool-time: "0s": want a duration of 1ms or more`,
		"system=-4":          "system: -4 tokens",
		"tools=0.2,speed=11": "speed: unknown key",
	} {
		if _, err := ParseAgent(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseAgent(%q): %v, want an error containing %q", spec, err, want)
		}
	}
}

// A generated session's turns hold the history: each turn's messages
// start with the last turn's, a tool call's results follow the
// assistant's call of them, and the cache-bust line differs between
// sessions while the system prompt and tools are the same.
func TestAgentTurnsGrow(t *testing.T) {
	t.Parallel()
	a, _ := ParseAgent("turns=6,tools=0.8,fork=0.5,agents=2,system=50,bust")
	in, _ := ParseLengths("20")
	out, _ := ParseLengths("10")
	w, err := New(Options{Input: in, Output: out, Agent: &a, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	ss, ok := w.Sessions()
	if !ok || w.Turns(0) != 6 {
		t.Fatalf("sessions %v, %d turns", ok, w.Turns(0))
	}
	calls, forks := 0, 0
	for s := range 4 {
		var last []string
		for k := range w.Turns(s) {
			req := w.Turn(s, k, nil)
			var msgs []string
			for _, m := range req.Messages {
				msgs = append(msgs, m.Role+":"+m.Content)
			}
			for i := range last {
				if msgs[i] != last[i] {
					t.Fatalf("session %d turn %d: message %d is not the last turn's", s, k+1, i)
				}
			}
			if !bytes.Equal(req.Tools, agentTools) || req.MaxTokens != 10 {
				t.Fatalf("session %d turn %d: tools %s, max_tokens %d", s, k+1, req.Tools, req.MaxTokens)
			}
			tool, _, agents := ss.After(s, k)
			if tool > 0 {
				calls++
			}
			if len(agents) > 0 {
				forks++
				if p, sub := Parent(agents[0]); !sub || p != s {
					t.Errorf("sub-agent %d of session %d: parent %d, %v", agents[0], s, p, sub)
				}
				if _, _, more := ss.After(agents[0], 0); len(more) > 0 {
					t.Errorf("a sub-agent forks sub-agents of its own")
				}
			}
			if k > 0 && tool == 0 && len(agents) == 0 {
				if _, _, prev := ss.After(s, k-1); len(prev) == 0 && msgs[len(msgs)-1][:5] != "user:" && msgs[len(msgs)-1][:5] != "tool:" {
					t.Errorf("session %d turn %d ends with %q", s, k+1, msgs[len(msgs)-1][:5])
				}
			}
			last = msgs
		}
	}
	if calls == 0 || forks == 0 {
		t.Fatalf("%d tool calls, %d forks: the shape wants both", calls, forks)
	}
	r0, r1 := w.Turn(0, 0, nil).Messages[0].Content, w.Turn(1, 0, nil).Messages[0].Content
	_, sys0, _ := strings.Cut(r0, "\n")
	_, sys1, _ := strings.Cut(r1, "\n")
	if r0 == r1 || sys0 != sys1 {
		t.Errorf("the busted system prompts: same %v, shared part same %v", r0 == r1, sys0 == sys1)
	}
	if tool, _, _ := ss.After(0, w.Turns(0)-1); tool != 0 {
		t.Errorf("the last turn waits %v", tool)
	}
}

// FuzzAgentTrace holds the agent trace reader to its contract on any
// input: an error names the file, and what it reads is a trace whose
// turns and sub-agents are in range, whose stats hold and whose sessions
// build requests.
func FuzzAgentTrace(f *testing.F) {
	addFiles(f, "agent/weka.jsonl", "agent/sessions.jsonl", "agent/otel.jsonl")
	f.Add([]byte(`{"id":"a","requests":[{"t":0,"type":"s","in":3,"out":1},{"t":1,"type":"subagent","requests":[{"t":1,"type":"n","in":2,"out":1}]},{"t":3,"type":"s","in":5,"out":1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ReadAgentTrace(bytes.NewReader(data), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") && !strings.HasPrefix(err.Error(), "reading fuzz") {
				t.Fatalf("error without the file's name: %v", err)
			}
			return
		}
		if tr.Top < 1 || tr.Top > len(tr.Sessions) {
			t.Fatalf("%d top-level of %d sessions", tr.Top, len(tr.Sessions))
		}
		for i, s := range tr.Sessions {
			for _, turn := range s.Turns {
				if turn.Input < 1 || turn.Output < 1 || turn.Tool < 0 || turn.Think < 0 {
					t.Fatalf("session %d: turn %+v", i, turn)
				}
				for _, a := range turn.Agents {
					if a < tr.Top || a >= len(tr.Sessions) || i >= tr.Top {
						t.Fatalf("session %d forks %d of %d (%d top-level)", i, a, len(tr.Sessions), tr.Top)
					}
				}
			}
		}
		if tr.Check(DefaultBlockSize) != nil {
			return
		}
		if s := tr.Stats(DefaultBlockSize); s.Prefix.PrefixTokens > s.Prefix.InputTokens {
			t.Fatalf("stats %+v", s)
		}
		w, err := New(Options{AgentTrace: tr, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for s := range min(tr.Top, 3) {
			for k := range min(w.Turns(s), 4) {
				if req := w.Turn(s, k, nil); req.Prompt == "" || req.MaxTokens < 1 {
					t.Fatalf("session %d turn %d: %+v", s, k, req)
				}
			}
		}
	})
}
