package record

import "time"

// DecodeSpan is a request's decode time (last token − first token) and
// decode tokens (output tokens − the tokens of the first token chunk), and
// whether decode speed is defined for it (docs/METRICS.md §2): TPOT and
// decode tok/s need both to be positive. A stream that arrived in one
// piece (a buffering proxy, or a server that sends everything at the end)
// has a decode time of zero: it has no decode speed, not an infinite one.
func (r *Record) DecodeSpan() (time.Duration, int, bool) {
	if r.FirstToken == Unset || r.LastToken == Unset || len(r.Chunks) == 0 {
		return 0, 0, false
	}
	d, n := r.LastToken-r.FirstToken, r.OutputTokens-r.Chunks[0].Tokens
	return d, n, d > 0 && n > 0
}
