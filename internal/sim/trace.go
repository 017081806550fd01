package sim

import (
	"encoding/json"
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
	// Headers and Body are the request's own headers and body fields but
	// the prompt, with Options.TraceWire.
	Headers map[string]string          `json:"headers,omitempty"`
	Body    map[string]json.RawMessage `json:"body,omitempty"`
}

// TraceChunk is one chunk as it left the server.
type TraceChunk struct {
	At     time.Time `json:"at"`
	Tokens int       `json:"tokens"`
}

// tracer keeps the last limit finished requests in a ring, so a long run's
// memory stays flat: each kept request costs its fixed fields plus 16 bytes
// a chunk, and the oldest is dropped (and counted) when the ring is full.
type tracer struct {
	mu      sync.Mutex
	limit   int
	ring    []traceEntry // up to limit; once full, next is the oldest
	next    int
	dropped int64
}

// DefaultTraceLimit is how many finished requests a trace keeps unless
// Options.TraceLimit says otherwise.
const DefaultTraceLimit = 100_000

func newTracer(limit int) *tracer {
	if limit <= 0 {
		limit = DefaultTraceLimit
	}
	return &tracer{limit: limit}
}

// traceEntry is owned by one handler until end. Its chunks are kept as
// offsets from Arrived, half the size of TraceChunk.
type traceEntry struct {
	TraceRequest
	chunks []traceChunk
}

type traceChunk struct {
	offset time.Duration // since Arrived
	tokens int32
}

func (t *tracer) begin(id uint64, reqID, route, proto string, prompt, maxTokens int, arrived time.Time) *traceEntry {
	if t == nil {
		return nil
	}
	return &traceEntry{TraceRequest: TraceRequest{ID: id, RequestID: reqID, Route: route, Proto: proto, PromptTokens: prompt, MaxTokens: maxTokens, Arrived: arrived}}
}

func (e *traceEntry) chunk(at time.Time, tokens int) {
	if e == nil || tokens <= 0 {
		return
	}
	e.chunks = append(e.chunks, traceChunk{at.Sub(e.Arrived), int32(tokens)})
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
	if len(t.ring) < t.limit {
		t.ring = append(t.ring, *e)
		return
	}
	t.ring[t.next] = *e
	t.next = (t.next + 1) % t.limit
	t.dropped++
}

// finished returns the kept requests, oldest first, and how many older
// ones were dropped.
func (t *tracer) finished() ([]TraceRequest, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]TraceRequest, 0, len(t.ring))
	for i := range t.ring {
		e := &t.ring[(t.next+i)%len(t.ring)]
		r := e.TraceRequest
		if len(e.chunks) > 0 {
			r.Chunks = make([]TraceChunk, len(e.chunks))
			for i, c := range e.chunks {
				r.Chunks[i] = TraceChunk{At: r.Arrived.Add(c.offset), Tokens: int(c.tokens)}
			}
		}
		out = append(out, r)
	}
	return out, t.dropped
}

func (t *tracer) droppedCount() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}

func (t *tracer) reset() {
	t.mu.Lock()
	t.ring, t.next, t.dropped = nil, 0, 0
	t.mu.Unlock()
}
