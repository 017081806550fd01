package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
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
// are chat − raw with the half width of their 95% interval over time
// blocks of pairs (pairedDiff).
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
	l.TTFT = pairBlocking.diff(c, recs, chatRoute, ttft)
	l.TPOT = pairBlocking.diff(c, recs, chatRoute, (*record.Record).TPOT)
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

// diff is chat − raw of a figure over the pairs of requests that
// shared a prompt (IDs 2k and 2k+1, both ok), with the half width of its
// 95% interval. The pairs of one level are not independent draws: at C=8
// four pairs share every batch step, and a slow stretch of the server
// moves its neighbours alike. So the interval's unit is a time block of
// consecutive pairs, each at least cu.rounds rounds of the level (a
// round is C requests, C/2 pairs), at most cu.most of them; Student's t on the blocks' mean
// differences with k − 1 degrees of freedom, as an A/B's time blocks
// (METRICS.md, "Error model"). Fewer than three blocks: no interval.
func (cu cut) diff(c int, recs []record.Record, chatRoute string, f func(*record.Record) (float64, bool)) Diff {
	type side struct {
		v, done float64
		ok      bool
	}
	pairs := map[int]*[2]side{}
	for i := range recs {
		r := &recs[i]
		v, ok := f(r)
		if !ok || !r.OK() {
			continue
		}
		p := pairs[r.ID/2]
		if p == nil {
			p = &[2]side{}
			pairs[r.ID/2] = p
		}
		k := 0
		if r.Endpoint == chatRoute {
			k = 1
		}
		p[k] = side{v: v, done: r.Done.Seconds(), ok: true}
	}
	type pd struct{ d, done float64 }
	var ds []pd
	for _, p := range pairs {
		if p[0].ok && p[1].ok {
			ds = append(ds, pd{p[1].v - p[0].v, max(p[0].done, p[1].done)})
		}
	}
	if len(ds) == 0 {
		return Diff{Value: math.NaN(), HalfWidth: math.NaN()}
	}
	slices.SortFunc(ds, func(a, b pd) int { return cmp.Compare(a.done, b.done) })
	all := make([]float64, len(ds))
	for i, x := range ds {
		all[i] = x.d
	}
	d := Diff{Value: meanOf(all), HalfWidth: math.NaN()}
	per := max(1, int(math.Ceil(cu.rounds*float64(c)/2))) // pairs a block at least
	k := min(cu.most, len(ds)/per)
	if k < minBlocks {
		return d
	}
	means := make([]float64, k)
	for i := range means {
		means[i] = meanOf(all[i*len(all)/k : (i+1)*len(all)/k])
	}
	_, d.HalfWidth, _ = stats.MeanCI(means)
	return d
}

// pairBlocking is how an overhead level is cut into blocks of pairs,
// chosen by measurement over generated servers
// (TestOverheadIdenticalRoutes).
var pairBlocking = cut{rounds: 0.5, most: 10}

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
