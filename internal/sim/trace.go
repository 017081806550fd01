package sim

import (
	"sync"
	"time"
)

// TraceRequest is the ground truth of one request: when each chunk left
// the server (after the write was flushed) and how many tokens it held.
type TraceRequest struct {
	ID           uint64       `json:"id"`
	RequestID    string       `json:"request_id,omitempty"` // the client's X-Request-Id
	Route        string       `json:"route"`
	Proto        string       `json:"proto"` // HTTP/1.1 or HTTP/2.0
	PromptTokens int          `json:"prompt_tokens"`
	MaxTokens    int          `json:"max_tokens"`
	OutputTokens int          `json:"output_tokens"`
	Arrived      time.Time    `json:"arrived"`
	Chunks       []TraceChunk `json:"chunks"`
	// Status is ok, cancelled, or the fault injected ("fault: reset").
	Status string `json:"status"`
	// LateSteps counts the engine steps this request ran in that ended late
	// (Engine.Lateness), and LatenessMax is the worst of them: a request with
	// late steps was timed on a starved simulator.
	LateSteps   int64         `json:"late_steps,omitempty"`
	LatenessMax time.Duration `json:"lateness_max_ns,omitempty"`
}

// TraceChunk is one chunk as it left the server.
type TraceChunk struct {
	At     time.Time `json:"at"`
	Tokens int       `json:"tokens"`
}

type tracer struct {
	mu    sync.Mutex
	limit int
	done  []TraceRequest
}

func newTracer(limit int) *tracer {
	if limit <= 0 {
		limit = 100_000
	}
	return &tracer{limit: limit}
}

// traceEntry is owned by one handler until end.
type traceEntry struct{ TraceRequest }

func (t *tracer) begin(id uint64, reqID, route, proto string, prompt, maxTokens int, arrived time.Time) *traceEntry {
	if t == nil {
		return nil
	}
	return &traceEntry{TraceRequest{ID: id, RequestID: reqID, Route: route, Proto: proto, PromptTokens: prompt, MaxTokens: maxTokens, Arrived: arrived}}
}

func (e *traceEntry) chunk(at time.Time, tokens int) {
	if e == nil || tokens <= 0 {
		return
	}
	e.Chunks = append(e.Chunks, TraceChunk{At: at, Tokens: tokens})
	e.OutputTokens += tokens
}

func (t *tracer) end(e *traceEntry, st *Stream, status string) {
	if t == nil || e == nil {
		return
	}
	e.Status = status
	if st != nil {
		e.LateSteps, e.LatenessMax = st.lateSteps.Load(), time.Duration(st.worstLate.Load())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.done) >= t.limit {
		t.done = append(t.done[:0], t.done[len(t.done)-t.limit/2:]...)
	}
	t.done = append(t.done, e.TraceRequest)
}

func (t *tracer) finished() []TraceRequest {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]TraceRequest(nil), t.done...)
}

func (t *tracer) reset() {
	t.mu.Lock()
	t.done = nil
	t.mu.Unlock()
}
