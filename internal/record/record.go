// Package record owns tokperf's vocabulary: the Request a run sends, the
// Record of what happened to it, and the Setup that describes the run. Every
// figure tokperf prints is derived from Records (docs/METRICS.md §1), so
// run, report and compare compose like a pipeline.
//
//	clock := record.NewClock()
//	rec := record.Record{ID: 1, Scheduled: clock.Now()}
package record

import (
	"encoding/json"
	"errors"
	"time"
)

// ErrTimeout is the cause of a request context that hit its per-request
// deadline, so a timeout is told apart from an interrupted run.
var ErrTimeout = errors.New("request timed out")

// Unset marks a time offset that never happened (no first byte, no token).
const Unset time.Duration = -1

// Clock gives offsets since a run's start on the monotonic clock.
type Clock struct{ start time.Time }

// NewClock starts a clock now.
func NewClock() Clock { return Clock{start: time.Now()} }

// Now is the time since the clock's start.
func (c Clock) Now() time.Duration { return time.Since(c.start) }

// Start is the wall and monotonic time the clock started.
func (c Clock) Start() time.Time { return c.start }

// Status says how a request ended.
type Status string

// The statuses of METRICS.md §1.
const (
	StatusOK          Status = "ok"
	StatusHTTPError   Status = "http_error"
	StatusStreamError Status = "stream_error"
	StatusTimeout     Status = "timeout"
	StatusCancelled   Status = "cancelled"
	StatusIncomplete  Status = "incomplete"
	// StatusBadContentType is a 2xx answer that is not a stream (an HTML
	// page from a proxy, a non-streaming JSON answer); its error holds the
	// content type.
	StatusBadContentType Status = "bad_content_type"
	// StatusConnectError is a connection that could not be opened (refused,
	// no route, DNS): the request never reached a server.
	StatusConnectError Status = "connect_error"
	// StatusBadCount is a response whose token counts no server could have
	// produced (more output than asked, an absurd magnitude, more tokens
	// than bytes): its counts are kept out of every figure, and its error
	// holds what the server claimed.
	StatusBadCount Status = "bad_count"
)

// TokenSource says where a token count came from, best first.
type TokenSource string

// Token count sources (METRICS.md §1).
const (
	SourceUsage      TokenSource = "usage"      // the server's final count
	SourceContinuous TokenSource = "continuous" // per-chunk cumulative count
	SourceTokenizer  TokenSource = "tokenizer"  // a client-side tokenizer
	SourceChunks     TokenSource = "chunks"     // one per chunk: an estimate
	// SourceEstimate is a count guessed from text without a tokenizer
	// (workload.EstimateTokens: words, punctuation marks, digit groups).
	SourceEstimate TokenSource = "estimate"
	SourceNone     TokenSource = "" // nothing known
)

// Estimated reports whether a count from this source is a guess that a
// report must flag.
func (s TokenSource) Estimated() bool {
	return s == SourceChunks || s == SourceEstimate || s == SourceNone
}

// Request is one generation request, independent of the wire protocol.
type Request struct {
	// Prompt is the text to send.
	Prompt string
	// PromptTokens is the prompt's length as the workload built it (0 if unknown).
	PromptTokens int
	// PromptSource says how PromptTokens was counted: SourceTokenizer when
	// the workload's tokenizer counted it, SourceEstimate when guessed from
	// the text, SourceNone when unknown.
	PromptSource TokenSource
	// Messages, when set, is the conversation for the chat endpoint, sent
	// as it is; Prompt then holds the same conversation flattened to text
	// (workload.Flatten) for every other endpoint.
	Messages []Message
	// Tools, when set, is the chat request's "tools" array exactly as the
	// dataset had it. Only the chat endpoint sends it.
	Tools json.RawMessage
	// MaxTokens caps the output.
	MaxTokens int
	// IgnoreEOS asks the server to generate exactly MaxTokens.
	IgnoreEOS bool
	// Temperature is the sampling temperature.
	Temperature float64
	// Seed is the sampling seed sent to the server; 0 sends none.
	Seed int64
}

// Message is one turn of a chat conversation.
type Message struct {
	Role string
	// Content is the turn's text; an array of content parts is reduced to
	// its text parts, joined by newlines.
	Content string
	// Raw is the message object exactly as the dataset had it (content
	// parts, name, tool_calls, tool_call_id included), or nil when the
	// message was built in code. The chat endpoint sends Raw when set.
	Raw json.RawMessage
}

// ToolCall is one tool call of a response: its id, the tool's name and
// its arguments as sent (a JSON text, unparsed).
type ToolCall struct {
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"args,omitempty"`
}

// Chunk is one token-carrying chunk of a response.
type Chunk struct {
	At     time.Duration // arrival, since the run's start
	Tokens int           // tokens it carried
}

// Record is everything measured about one request (METRICS.md §1). Offsets
// are since the run's start; Unset means the event did not happen.
type Record struct {
	ID          int
	Stage       int // index of the stage (concurrency level or rate) it belongs to
	Concurrency int // the stage's target concurrency (0 for uncapped open loop)
	Rate        float64
	Warmup      bool // excluded from every figure
	// Conversation and Turn place a multi-turn request: the conversation's
	// index in the run and the turn's, from 1 (0: not a conversation).
	Conversation int
	Turn         int
	// Root is, for a sub-agent's turn, 1 + the Conversation of the
	// top-level agent session it works for (0 for any other request), so
	// a session's figures can take in its sub-agents' turns.
	Root int
	// ToolWait and AgentWait are what an agent session waited for after
	// its previous turn ended and before this one was scheduled: the
	// tool's time, and the sub-agents the previous turn forked. Neither is
	// in the client's queue (METRICS.md §3, Agent sessions).
	ToolWait, AgentWait time.Duration
	Repeat              int // which repeat of its level (--repeat), from 0

	Scheduled    time.Duration
	Sent         time.Duration
	FirstByte    time.Duration
	FirstToken   time.Duration
	FirstContent time.Duration
	LastToken    time.Duration
	Done         time.Duration

	Chunks []Chunk

	OutputTokens int
	OutputSource TokenSource
	// ChunkSource says where the per-chunk counts came from: continuous
	// (a cumulative count per chunk), tokenizer, or chunks (assumed one).
	ChunkSource  TokenSource
	PromptTokens int
	PromptSource TokenSource
	// AskedPromptTokens is the prompt's length as the workload counted it
	// (AskedPromptSource: a tokenizer, or an estimate), to set beside the
	// server's PromptTokens.
	AskedPromptTokens int
	AskedPromptSource TokenSource
	CachedTokens      int
	// ReasoningTokens are the output tokens spent on the reasoning
	// channel (part of OutputTokens): the server's count
	// (usage.completion_tokens_details.reasoning_tokens, ReasoningSource
	// usage), else the tokens of chunks with reasoning and no content.
	ReasoningTokens int
	ReasoningSource TokenSource
	// ToolCalls are the tool calls the server answered with, their
	// streamed fragments joined (nil for none).
	ToolCalls []ToolCall
	// ToolTokens are the output tokens spent in tool calls (part of
	// OutputTokens): the tokens of chunks that carried only tool-call
	// deltas, counted as the chunks were (ToolSource); no server states it.
	ToolTokens int
	ToolSource TokenSource

	Status       Status
	HTTPCode     int
	Error        string
	FinishReason string
	// Retries counts re-sends after a connection failed before any response byte.
	Retries int
	// NoKeepAlive says the request dialled a new connection because the
	// server was learned to close every connection after a response
	// without saying so (llama-server); its setup is in Connect.
	NoKeepAlive bool
	// RetryAfter is the wait the server asked for before the next request
	// (Retry-After on a 429 or 503, capped at a minute); 0 when none.
	RetryAfter time.Duration
	// Backoff is how long the slot waited before sending this request,
	// after the one before it got no response or was told to slow down:
	// the server's Retry-After where it gave one, else the runner's
	// doubling backoff. It lies before Scheduled: never in the client's
	// queue or TTFT.
	Backoff time.Duration
	// Buffered counts token chunks that were already waiting in the
	// client's buffer when read: their arrival times are late.
	Buffered int
	// Coalesced counts token chunks that came in one read with the one
	// before while the client read them as soon as they arrived (by the
	// kernel's arrival stamp): the server wrote them together, so their
	// shared arrival is true and the client did not fall behind.
	Coalesced int
	// Connect is the time spent opening a new connection, 0 on a reused one.
	Connect time.Duration
	// Text is the output, kept only when asked (tokperf check).
	Text string
	// Endpoint is set when a run mixes endpoints (tokperf overhead).
	Endpoint string
	// Server is the request's timing as the server reported it, if it did.
	Server *ServerTiming
}

// ServerTiming is what a server says about one request's timing (llama.cpp
// timings, Ollama durations, SGLang e2e_latency). Zero means not reported.
type ServerTiming struct {
	// QueueMs is the time from the server's receipt of the request to its
	// first forward step (SGLang e2e_latency − inference_time, vLLM's
	// metrics.queue_time_ms): its wait for a place in the batch.
	QueueMs      float64 `json:"queue_ms,omitempty"`
	PromptMs     float64 `json:"prompt_ms,omitempty"`     // prompt processing
	DecodeMs     float64 `json:"decode_ms,omitempty"`     // generating OutputTokens
	E2EMs        float64 `json:"e2e_ms,omitempty"`        // the whole request
	OutputTokens int     `json:"output_tokens,omitempty"` // tokens the decode time covers
	// Compute says the decode time is the engine's compute only (Ollama's
	// eval_duration), not the span a client sees: set beside the client's
	// decode it differs by the time between steps, and E2E is the like
	// for like.
	Compute bool `json:"compute_only,omitempty"`
}

// DecodeTokS is the server's own decode speed, or 0 when not reported.
func (t *ServerTiming) DecodeTokS() float64 {
	if t == nil || t.DecodeMs <= 0 || t.OutputTokens <= 0 {
		return 0
	}
	return float64(t.OutputTokens) / t.DecodeMs * 1e3
}

// New returns a Record with every optional time Unset.
func New(id int) Record {
	return Record{
		ID: id, FirstByte: Unset, FirstToken: Unset, FirstContent: Unset, LastToken: Unset,
	}
}

// OK reports whether the request finished normally.
func (r *Record) OK() bool { return r.Status == StatusOK }

// AddChunk appends a token-carrying chunk and moves FirstToken and LastToken.
func (r *Record) AddChunk(at time.Duration, tokens int) {
	if tokens <= 0 {
		return
	}
	if r.FirstToken == Unset {
		r.FirstToken = at
	}
	r.LastToken = at
	r.Chunks = append(r.Chunks, Chunk{At: at, Tokens: tokens})
}

// ChunkTokens is the sum of tokens over the chunks.
func (r *Record) ChunkTokens() int {
	n := 0
	for _, c := range r.Chunks {
		n += c.Tokens
	}
	return n
}
