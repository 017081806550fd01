package sim

import (
	"fmt"
	"time"
)

// Virtual is a server's engine in virtual time: each request is served as
// the server would serve it (its output length, prefix-cache blocks and
// speculative acceptance: Server.job) through the profile's scheduler with
// no network and no clock (Simulate's engine). Phases run one after
// another on one batch, so the prefix cache and the clock carry across
// them as a served run's do. What it returns is the profile's own answer,
// whatever else the machine is doing. It shares nothing with the served
// engine, and faults, degradation and the wire are not modelled.
type Virtual struct {
	s   *Server
	b   *batch
	now time.Duration
}

// Virtual returns the server's engine in virtual time.
func (s *Server) Virtual() *Virtual { return &Virtual{s: s, b: newBatch(s.p, nil)} }

// VirtualRequest is one request as a client sends it.
type VirtualRequest struct {
	Prompt      string
	MaxTokens   int
	IgnoreEOS   bool
	Temperature float64
	Seed        int64
	// Messages are a chat's turns, role and text (nil: Prompt as one
	// user turn); only the chat route reads them.
	Messages [][2]string
}

// Run sends n requests (0: as many as limit allows), c at a time, closed
// loop: each slot sends the next, req(k) for the phase's k-th, as its last
// ends, until n have started or limit has passed since the phase began
// (0: no limit). It returns what a client with no latency of its own sees,
// every chunk kept (Outcome.All), in virtual time since the first phase
// began; chat pays the chat route's costs. A request the server would
// refuse (its prompt and output past the context) ends the phase with an
// error, and what was served before it.
func (v *Virtual) Run(c, n int, limit time.Duration, chat bool, req func(k int) VirtualRequest) ([]Outcome, error) {
	if n == 0 && limit <= 0 {
		return nil, nil
	}
	var refused error
	ph := Phase{Concurrency: c, Limit: limit, Chat: chat, Chunks: true, More: func(k int) (Job, bool) {
		if refused != nil || (n > 0 && k >= n) {
			return Job{}, false
		}
		r := req(k)
		g := &gen{prompt: r.Prompt, promptTokens: v.s.count(r.Prompt), maxTokens: r.MaxTokens, ignoreEOS: r.IgnoreEOS,
			temperature: r.Temperature, seed: r.Seed, chat: chat}
		if chat {
			msgs := []message{{"user", r.Prompt}}
			if len(r.Messages) > 0 {
				msgs = msgs[:0]
				for _, m := range r.Messages {
					msgs = append(msgs, message{m[0], m[1]})
				}
			}
			v.s.chatPrompt(g, msgs)
		}
		if g.maxTokens < 0 || g.promptTokens+g.maxTokens > v.s.p.ContextLength {
			refused = fmt.Errorf("request %d: prompt (%d tokens) plus max tokens (%d) exceeds the context length %d", k, g.promptTokens, g.maxTokens, v.s.p.ContextLength)
			return Job{}, false
		}
		job, _, _ := v.s.job(g)
		return job, true
	}}
	return simulate(v.b, v.s.p, ph, virtualBase, &v.now), refused
}

// Now is the virtual time since the first phase began: the end of the last.
func (v *Virtual) Now() time.Duration { return v.now }

// virtualBase is the wall time virtual time 0 stands for (any fixed time:
// the engine reads only differences).
var virtualBase = time.Unix(1<<30, 0)
