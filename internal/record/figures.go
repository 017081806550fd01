package record

import (
	"math"
	"time"
)

// The per-request figures of docs/METRICS.md §2, defined once. Each
// returns ok false where the figure is undefined for this request (no
// token arrived, no decode tokens, a zero span); callers skip such
// requests instead of computing from a zero or negative span.

// ClientQueue is sent − scheduled: the time the request waited inside the client.
func (r *Record) ClientQueue() time.Duration { return r.Sent - r.Scheduled }

// TTFT is first_token − sent.
func (r *Record) TTFT() (time.Duration, bool) {
	if r.FirstToken == Unset {
		return 0, false
	}
	return r.FirstToken - r.Sent, true
}

// TTFO is first_content − sent: the first visible content, which differs
// from TTFT for reasoning models.
func (r *Record) TTFO() (time.Duration, bool) {
	if r.FirstContent == Unset {
		return 0, false
	}
	return r.FirstContent - r.Sent, true
}

// E2E is last_token − sent.
func (r *Record) E2E() (time.Duration, bool) {
	if r.LastToken == Unset {
		return 0, false
	}
	return r.LastToken - r.Sent, true
}

// FirstChunkTokens is the number of tokens in the first token chunk.
// Where the server gave no per-chunk counts (one per chunk was assumed)
// but a total that says otherwise, the first chunk is taken to hold the
// mean, output tokens / chunks, rounded: assuming one would count the
// rest of its tokens as decoded.
func (r *Record) FirstChunkTokens() int {
	if len(r.Chunks) == 0 {
		return 0
	}
	if r.ChunkSource.Estimated() {
		if sum := r.ChunkTokens(); sum > 0 && sum != r.OutputTokens && r.OutputTokens > 0 {
			return int(math.Round(float64(r.OutputTokens) / float64(len(r.Chunks))))
		}
	}
	return r.Chunks[0].Tokens
}

// Decode is the decode time (last_token − first_token) and the decode
// tokens (output tokens less those of the first chunk); ok only when both
// are positive, so no figure is ever divided by a zero or negative span.
func (r *Record) Decode() (time.Duration, int, bool) {
	if len(r.Chunks) == 0 || r.FirstToken == Unset || r.LastToken == Unset {
		return 0, 0, false
	}
	dt, dn := r.LastToken-r.FirstToken, r.OutputTokens-r.FirstChunkTokens()
	return dt, dn, dt > 0 && dn > 0
}

// TPOT is decode time / decode tokens, in milliseconds per token.
func (r *Record) TPOT() (float64, bool) {
	dt, dn, ok := r.Decode()
	if !ok {
		return 0, false
	}
	return ms(dt) / float64(dn), true
}

// DecodeTokS is decode tokens / decode time = 1/TPOT: the speed a user
// sees once text flows.
func (r *Record) DecodeTokS() (float64, bool) {
	dt, dn, ok := r.Decode()
	if !ok {
		return 0, false
	}
	return float64(dn) / dt.Seconds(), true
}

// RequestTokS is output tokens / E2E latency (it includes TTFT).
func (r *Record) RequestTokS() (float64, bool) {
	lat, ok := r.E2E()
	if !ok || lat <= 0 {
		return 0, false
	}
	return float64(r.OutputTokens) / lat.Seconds(), true
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Ms is a duration in milliseconds, the unit of every latency figure.
func Ms(d time.Duration) float64 { return ms(d) }

// Prompt is the request's prompt length: the server's count where it
// sent one, else what tokperf sent as its workload counted it (sent is
// then true). Servers that send no prompt count (TGI ≤ 2.x native, LM
// Studio, some providers) would otherwise read as prompts of 0 tokens.
func (r *Record) Prompt() (n int, sent bool) {
	if r.PromptTokens == 0 && r.PromptSource == SourceNone && r.AskedPromptTokens > 0 {
		return r.AskedPromptTokens, true
	}
	return r.PromptTokens, false
}
