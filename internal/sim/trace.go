package sim

import (
	"encoding/json"
	"sync"
	"time"
)

// TraceRequest is the ground truth of one request: when each chunk left
// the server (after the write was flushed) and how many tokens it held.
type TraceRequest struct {
	ID           uint64 `json:"id"`
	RequestID    string `json:"request_id,omitempty"` // the client's X-Request-Id
	Route        string `json:"route"`
	Proto        string `json:"proto"` // HTTP/1.1 or HTTP/2.0
	PromptTokens int    `json:"prompt_tokens"`
	MaxTokens    int    `json:"max_tokens"`
	OutputTokens int    `json:"output_tokens"`
	// Tool is the tool the answer called, ToolTokens the output tokens
	// of its arguments (the rest were reasoning); empty for no call.
	Tool       string    `json:"tool,omitempty"`
	ToolTokens int       `json:"tool_tokens,omitempty"`
	Arrived    time.Time `json:"arrived"`
	// Admitted is when the engine gave the request its slot (the end of
	// its queue) and FirstStep when the step that made its first token
	// ended (the end of its prefill); zero when no token was made.
	Admitted  time.Time    `json:"admitted,omitzero"`
	FirstStep time.Time    `json:"first_step,omitzero"`
	Chunks    []TraceChunk `json:"chunks"`
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

// tracer keeps the last finished requests in a ring, so a long run's
// memory stays flat: each kept request costs its fixed fields plus 16 bytes
// a chunk, and the oldest are dropped (and counted) to keep at most limit
// requests and chunkLimit chunks. The chunk budget is what holds memory
// flat soon: 100,000 requests of 256 chunks would be 400 MB, reached only
// after minutes of a long run.
type tracer struct {
	mu         sync.Mutex
	limit      int          // requests kept at most
	chunkLimit int          // chunks kept at most, over the kept requests
	ring       []traceEntry // grows up to limit; the kept ones are [head, head+n) mod len
	head, n    int
	chunks     int // chunks held by the kept requests
	dropped    int64
}

// DefaultTraceLimit is how many finished requests a trace keeps unless
// Options.TraceLimit says otherwise.
const DefaultTraceLimit = 100_000

// DefaultTraceChunks is how many chunks, over all kept requests, a trace
// keeps unless Options.TraceChunks says otherwise: 64 MB of chunk times.
const DefaultTraceChunks = 4 << 20

func newTracer(limit, chunks int) *tracer {
	if limit <= 0 {
		limit = DefaultTraceLimit
	}
	if chunks <= 0 {
		chunks = DefaultTraceChunks
	}
	return &tracer{limit: limit, chunkLimit: chunks}
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

// first stamps the engine's admission and first step of the request.
func (e *traceEntry) first(admitted, step time.Time) {
	if e != nil {
		e.Admitted, e.FirstStep = admitted, step
	}
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
	// Kept at its exact size: append's spare room would double the cost.
	e.chunks = append([]traceChunk(nil), e.chunks...)
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.n > 0 && (t.n >= t.limit || t.chunks+len(e.chunks) > t.chunkLimit) {
		t.chunks -= len(t.ring[t.head].chunks)
		t.ring[t.head] = traceEntry{}
		t.head = (t.head + 1) % len(t.ring)
		t.n--
		t.dropped++
	}
	if t.n == len(t.ring) {
		// Full below the limit: one more slot, in room for at most limit.
		if t.head != 0 || len(t.ring) == cap(t.ring) {
			grown := make([]traceEntry, t.n, min(t.limit, max(2*t.n, 16)))
			copy(grown, t.ring[t.head:])
			copy(grown[t.n-t.head:], t.ring[:t.head])
			t.ring, t.head = grown, 0
		}
		t.ring = t.ring[:t.n+1]
	}
	t.ring[(t.head+t.n)%len(t.ring)] = *e
	t.n++
	t.chunks += len(e.chunks)
}

// finished returns the kept requests, oldest first, and how many older
// ones were dropped.
func (t *tracer) finished() ([]TraceRequest, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]TraceRequest, 0, t.n)
	for i := range t.n {
		e := &t.ring[(t.head+i)%len(t.ring)]
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
	t.ring, t.head, t.n, t.chunks, t.dropped = nil, 0, 0, 0, 0
	t.mu.Unlock()
}
