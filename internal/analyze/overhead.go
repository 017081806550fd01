package analyze

import (
	"fmt"
	"math"
	"strings"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// OverheadSchema names the JSON form of an Overhead and its version.
const OverheadSchema = "tokperf-overhead/1"

// Overhead is the raw generation endpoint against the chat API on one
// server, the same prompts through both, level by level.
type Overhead struct {
	Schema    string          `json:"schema"`
	File      string          `json:"file,omitempty"`
	Setup     record.Setup    `json:"setup"`
	RawRoute  string          `json:"raw_route"`
	ChatRoute string          `json:"chat_route"`
	Levels    []OverheadLevel `json:"levels"`
}

// OverheadLevel is one concurrency level's paired comparison. Differences
// are chat − raw with the half width of their 95% interval (Welch).
type OverheadLevel struct {
	C    int           `json:"concurrency"`
	Raw  summary.Stage `json:"raw"`
	Chat summary.Stage `json:"chat"`
	// TTFT and TPOT are the differences of the means and their half widths, ms.
	TTFT Diff `json:"ttft_ms"`
	TPOT Diff `json:"tpot_ms"`
	// ICLRaw and ICLChat are each endpoint's mean gap between chunks, ms.
	ICLRaw  float64 `json:"icl_raw_ms"`
	ICLChat float64 `json:"icl_chat_ms"`
	// RawAggTokS and ChatAggTokS are each endpoint's aggregate tok/s by
	// Little's law (C × tokens / Σ E2E): both share one window.
	RawAggTokS  float64 `json:"raw_aggregate_tok_s"`
	ChatAggTokS float64 `json:"chat_aggregate_tok_s"`
	// PromptRaw and PromptChat are the mean prompt tokens each reported:
	// the chat template's additions show here.
	PromptRaw  float64 `json:"prompt_tokens_raw"`
	PromptChat float64 `json:"prompt_tokens_chat"`
	Reading    string  `json:"reading"`
}

// Diff is a difference of means and the half width of its 95% interval
// (NaN when there are too few samples).
type Diff struct {
	Value, HalfWidth float64
}

// MarshalJSON writes the difference with null for an unknown interval.
func (d Diff) MarshalJSON() ([]byte, error) {
	return jsonOf(struct {
		Value     *float64 `json:"diff"`
		HalfWidth *float64 `json:"half_width_95"`
	}{finite(d.Value), finite(d.HalfWidth)})
}

// Significant says the difference's 95% interval excludes zero.
func (d Diff) Significant() bool { return !math.IsNaN(d.HalfWidth) && math.Abs(d.Value) > d.HalfWidth }

// String is "+55.0 ± 1.3", or "+55.0" without an interval.
func (d Diff) String() string {
	if math.IsNaN(d.HalfWidth) {
		return fmt.Sprintf("%+.1f", d.Value)
	}
	return fmt.Sprintf("%+.1f ± %.1f", d.Value, d.HalfWidth)
}

// OverheadOf compares one level's records: those whose Endpoint is
// chatRoute against the others.
func OverheadOf(c int, recs []record.Record, chatRoute string) OverheadLevel {
	var raw, chat []record.Record
	for _, r := range recs {
		if r.Endpoint == chatRoute {
			chat = append(chat, r)
		} else {
			raw = append(raw, r)
		}
	}
	l := OverheadLevel{C: c, Raw: summary.Of(raw, 0), Chat: summary.Of(chat, 0)}
	pick := func(rs []record.Record, f func(r *record.Record) (float64, bool)) []float64 {
		var out []float64
		for i := range rs {
			if v, ok := f(&rs[i]); ok && rs[i].OK() {
				out = append(out, v)
			}
		}
		return out
	}
	ttft := func(r *record.Record) (float64, bool) {
		d, ok := r.TTFT()
		return record.Ms(d), ok
	}
	prompt := func(r *record.Record) (float64, bool) { return float64(r.PromptTokens), r.PromptTokens > 0 }
	l.TTFT.Value, l.TTFT.HalfWidth = stats.MeanDiff(pick(raw, ttft), pick(chat, ttft))
	l.TPOT.Value, l.TPOT.HalfWidth = stats.MeanDiff(pick(raw, (*record.Record).TPOT), pick(chat, (*record.Record).TPOT))
	l.ICLRaw, l.ICLChat = l.Raw.ICL.Mean, l.Chat.ICL.Mean
	// Both endpoints share one window, so each one's own aggregate is
	// estimated by Little's law from its requests' latency.
	agg := func(s summary.Stage) float64 {
		return float64(c) * float64(s.OutputTokens) / (s.E2E.Mean * float64(s.E2E.N) / 1e3)
	}
	l.RawAggTokS, l.ChatAggTokS = agg(l.Raw), agg(l.Chat)
	l.PromptRaw, l.PromptChat = meanOf(pick(raw, prompt)), meanOf(pick(chat, prompt))
	l.Reading = l.reading()
	return l
}

func meanOf(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// reading is the one-line interpretation of a level.
func (l OverheadLevel) reading() string {
	var b strings.Builder
	fmt.Fprintf(&b, "at C=%d chat adds %s ms to TTFT and %s ms per token (%+.0f%%)", l.C, l.TTFT, l.TPOT, 100*(l.Chat.TPOT.Mean/l.Raw.TPOT.Mean-1))
	if !l.TTFT.Significant() && !l.TPOT.Significant() {
		b.WriteString(": no significant difference")
		return b.String()
	}
	// When chat's chunks come further apart than the raw stream's, the chat
	// path paces the stream: its per-chunk cost is that gap, and the rest of
	// the TTFT difference is paid once per request.
	if l.TPOT.Significant() && l.TPOT.Value > 0 && l.ICLChat > l.ICLRaw {
		fmt.Fprintf(&b, "; the chat path paces the stream at %.1f ms per chunk (the engine's chunks come every %.1f ms), so it costs about %.1f ms per chunk and %.1f ms per request",
			l.ICLChat, l.ICLRaw, l.ICLChat, l.TTFT.Value-l.ICLChat)
	} else {
		fmt.Fprintf(&b, "; the per-chunk cost hides behind the engine's step here, and about %.1f ms is paid per request", l.TTFT.Value)
	}
	// What a short smoke test would show through each.
	n := 100.0
	smoke := func(s summary.Stage) float64 { return n / ((s.TTFT.Mean + (n-1)*s.TPOT.Mean) / 1e3) }
	fmt.Fprintf(&b, "; a %.0f-token smoke test reads %.0f tok/s through chat against %.0f raw", n, smoke(l.Chat), smoke(l.Raw))
	return b.String()
}
