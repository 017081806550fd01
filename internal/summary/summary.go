// Package summary turns one stage's Records into the figures of
// docs/METRICS.md §2–3, exactly as defined there. Warm-up records are
// excluded; latency figures use the requests that finished ok.
//
//	s := summary.Of(records, 32) // records of the C=32 stage
//	fmt.Println(s.AggregateTokS, s.TTFT.P99)
package summary

import (
	"time"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
)

// Stage is one stage's figures. Times in distributions are milliseconds.
type Stage struct {
	Index       int     `json:"stage"`
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate,omitempty"`
	// Repeat is which repeat of its level the stage is (--repeat), from 0.
	Repeat int `json:"repeat,omitempty"`

	Requests int                   `json:"requests"` // measured, any status
	OK       int                   `json:"ok"`
	Errors   map[record.Status]int `json:"errors,omitempty"` // by status, cancelled excluded
	// HTTPCodes counts the failed requests by HTTP status code, and
	// FirstError is the first message of each failed status.
	HTTPCodes  map[int]int              `json:"http_codes,omitempty"`
	FirstError map[record.Status]string `json:"first_error,omitempty"`
	Cancelled  int                      `json:"cancelled,omitempty"`
	Retries    int                      `json:"retries,omitempty"`
	// RetryAfter counts the answers that asked the client to wait
	// (Retry-After on a 429 or 503); BackoffS is the slots' time spent
	// waiting before a re-send, outside every request's span.
	RetryAfter int `json:"retry_after,omitempty"`
	// NoKeepAlive counts the requests sent on a new connection because the
	// server was learned to close every connection after a response.
	NoKeepAlive int     `json:"no_keep_alive,omitempty"`
	BackoffS    float64 `json:"backoff_s,omitempty"`

	WallS        float64 `json:"wall_s"`
	OutputTokens int     `json:"output_tokens"`
	PromptTokens int     `json:"prompt_tokens"`
	CachedTokens int     `json:"cached_tokens"`
	// ReasoningTokens are the output tokens of ok requests spent on the
	// reasoning channel (part of OutputTokens).
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// ToolCalled counts the ok requests that answered with a tool call,
	// ToolTokens the output tokens of their calls (part of OutputTokens;
	// counted from chunks, METRICS.md §1 tool_tokens).
	ToolCalled int `json:"tool_called,omitempty"`
	ToolTokens int `json:"tool_tokens,omitempty"`
	// PromptCompared counts the ok requests whose prompt both a tokenizer
	// (the workload's) and the server counted; AskedPrompt and
	// ServerPrompt are their prompt tokens by each.
	PromptCompared int `json:"prompt_compared,omitempty"`
	AskedPrompt    int `json:"asked_prompt_tokens,omitempty"`
	ServerPrompt   int `json:"server_prompt_tokens,omitempty"`
	// PromptEstimated counts ok requests whose prompt length was estimated
	// by the workload and not counted by the server either.
	PromptEstimated int `json:"prompt_estimated,omitempty"`
	// PromptSent counts ok requests whose server sent no prompt count:
	// their prompt tokens (in PromptTokens and input tok/s) are what
	// tokperf sent, as its workload counted them (record.Prompt).
	PromptSent int `json:"prompt_sent,omitempty"`

	AggregateTokS        float64 `json:"aggregate_tok_s"`
	SteadyTokS           float64 `json:"steady_tok_s"` // 0 when no time had the target in flight
	InputTokS            float64 `json:"input_tok_s"`
	TotalTokS            float64 `json:"total_tok_s"`
	RequestsPerS         float64 `json:"requests_per_s"`
	EffectiveConcurrency float64 `json:"effective_concurrency"`
	TokensPerChunk       float64 `json:"tokens_per_chunk"`
	// AggregateSpread is the aggregate's relative standard error from the
	// stage's time blocks: the noise a difference between levels must beat.
	AggregateSpread float64 `json:"aggregate_spread,omitempty"`
	// Goodput is the requests (and their tokens) per second that met every
	// objective of the SLO; with no SLO every ok request counts.
	GoodputRequestsPerS float64 `json:"goodput_requests_per_s"`
	GoodputTokS         float64 `json:"goodput_tok_s"`
	SLOMet              int     `json:"slo_met"`

	// NoContent counts ok requests with tokens but no visible content
	// (reasoning only): their TTFO is undefined.
	NoContent int `json:"no_content,omitempty"`
	// BufferedShare is the share of token chunks that were already waiting
	// in the client's buffer when read (a client falling behind).
	BufferedShare float64 `json:"buffered_share"`
	// CoalescedShare is the share of token chunks the server wrote together
	// with the one before (one read, read at once): not the client's lag.
	CoalescedShare   float64 `json:"coalesced_share,omitempty"`
	MeanOutputTokens float64 `json:"mean_output_tokens"`
	// LengthFinished and EarlyFinished count ok requests by their finish
	// reason: ended at the token limit ("length"; llama.cpp's "limit"), or
	// by another reason the server stated (EOS, a stop string); requests
	// with none are in neither. The short-output warning reads them.
	LengthFinished int `json:"length_finished,omitempty"`
	EarlyFinished  int `json:"early_finished,omitempty"`

	ClientQueue stats.Dist `json:"client_queue_ms"`
	// ClientWait is the client queue less the time spent opening new
	// connections: what the client itself made requests wait.
	ClientWait stats.Dist `json:"client_wait_ms"`
	Late       int        `json:"late"` // open loop: sent more than LateMs behind schedule
	// LateMs is the lateness above which an open-loop send counts as late:
	// LateThreshold past what this machine's timers themselves oversleep.
	LateMs      float64    `json:"late_threshold_ms,omitempty"`
	TTFT        stats.Dist `json:"ttft_ms"`
	TTFO        stats.Dist `json:"ttfo_ms"`
	E2E         stats.Dist `json:"e2e_ms"`
	TPOT        stats.Dist `json:"tpot_ms"`
	DecodeTokS  stats.Dist `json:"decode_tok_s"`
	RequestTokS stats.Dist `json:"request_tok_s"`
	ITL         stats.Dist `json:"itl_ms"` // token-weighted
	ICL         stats.Dist `json:"icl_ms"`

	// What the server reported about the same requests, where it did.
	ServerTimed      int        `json:"server_timed,omitempty"`
	ServerCompute    int        `json:"server_compute_only,omitempty"` // of them, decode times of compute only
	ServerDecodeTokS stats.Dist `json:"server_decode_tok_s"`
	ServerE2E        stats.Dist `json:"server_e2e_ms"`
	// TTFTSplit is where the TTFT went, by the parts the server reported;
	// nil when it reported none.
	TTFTSplit *Split `json:"ttft_split,omitempty"`

	// Turns are a multi-turn stage's figures by turn (METRICS.md §2):
	// the first turn of every conversation, the second, and so on.
	Turns []Turn `json:"turns,omitempty"`
	// Sessions are an agent stage's session figures (METRICS.md §3).
	Sessions *Sessions `json:"sessions,omitempty"`

	// Token sources over ok requests, for the warnings.
	OutputSources map[record.TokenSource]int `json:"output_sources"`
	ChunkSources  map[record.TokenSource]int `json:"chunk_sources"`
}

// LateThreshold is how far behind schedule, past the timer's own
// oversleep, an open-loop send counts as late.
const LateThreshold = time.Millisecond

// Of computes a stage's figures; target is its concurrency (0 for an
// uncapped open loop, which has no steady state to speak of).
func Of(recs []record.Record, target int) Stage { return OfSLO(recs, target, record.SLO{}) }

// OfSLO is Of with goodput measured against an SLO.
func OfSLO(recs []record.Record, target int, slo record.SLO) Stage {
	a := NewAcc(target, slo)
	for i := range recs {
		a.Add(&recs[i])
	}
	return a.Stage()
}
