package analyze

import (
	"fmt"
	"math"

	"github.com/tokperf/tokperf/internal/record"
)

// tokenSource is where each tool's output counts come from, as its code
// reads them.
var tokenSource = map[string]string{
	"vllm":     "the server's usage where it sends one, else its client tokenizer on the text",
	"sglang":   "the server's count (and its tokenizer's retokenized count beside it)",
	"guidellm": "the server's usage, else its iterations",
	"aiperf":   "its client tokenizer on the text, unless --use-server-token-count",
}

// workloadDiffs sets what the two runs asked of the server side by side.
// Where the peer's file does not say, it says so.
func workloadDiffs(ps Stage, src *Source, all, ok []record.Record) []WorkloadDiff {
	unknown := "not in its file"
	level := func(c int, rate float64) string {
		switch {
		case rate > 0:
			return fmt.Sprintf("rate %g/s", rate)
		case c > 0:
			return fmt.Sprintf("C=%d", c)
		}
		return unknown
	}
	warm, measured := 0, 0
	var prompt, output, cached float64
	for _, r := range all {
		if r.Warmup {
			warm++
		} else {
			measured++
		}
	}
	for _, r := range ok {
		p, _ := r.Prompt()
		prompt += float64(p)
		output += float64(r.OutputTokens)
		cached += float64(r.CachedTokens)
	}
	n := float64(len(ok))
	mean := func(has bool, total int) string {
		if !has || ps.OK == 0 {
			return unknown
		}
		return fmt.Sprintf("%.1f", float64(total)/float64(ps.OK))
	}
	src0 := ok[0].OutputSource
	apart := func(mine float64, has bool, total int) bool {
		if !has || ps.OK == 0 {
			return false
		}
		peer := float64(total) / float64(ps.OK)
		return math.Abs(peer-mine) > 0.05*math.Max(math.Abs(mine), 1)
	}
	mineLevel, peerLevel := level(ok[0].Concurrency, ok[0].Rate), level(ps.Concurrency, ps.Rate)
	out := []WorkloadDiff{
		{Name: "level", Tokperf: mineLevel, Peer: peerLevel, Differs: peerLevel != unknown && peerLevel != mineLevel,
			Note: "a different concurrency or rate is a different load: not estimated"},
		{Name: "requests", Tokperf: fmt.Sprintf("%d measured (%d ok), %d warm-up left out", measured, len(ok), warm), Peer: fmt.Sprintf("%d (%d ok)", ps.Requests, ps.OK),
			Note: "the peer counts every request of its run after its own warm-up, if any"},
		{Name: "prompt tokens, mean", Tokperf: fmt.Sprintf("%.1f", prompt/n), Peer: mean(src.Has("prompt_tokens"), ps.PromptTokens),
			Differs: apart(prompt/n, src.Has("prompt_tokens"), ps.PromptTokens), Note: "longer prompts lengthen prefill, so TTFT: not estimated"},
		{Name: "output tokens, mean", Tokperf: fmt.Sprintf("%.1f", output/n), Peer: mean(src.Has("output_tokens"), ps.OutputTokens),
			Differs: apart(output/n, src.Has("output_tokens"), ps.OutputTokens),
			Note:    "E2E is estimated at the peer's TPOT per token of difference; an EOS that ends requests early (no ignore_eos) shows here"},
		{Name: "prompt reuse", Tokperf: fmt.Sprintf("%.1f%% of prompt tokens cached", 100*cached/max(prompt, 1)), Peer: unknown,
			Note: "a prompt the server has cached skips prefill"},
		{Name: "token source", Tokperf: string(src0), Peer: tokenSource[src.Tool]},
	}
	return out
}

// lengthStep adds, where both runs state their mean output length and
// they differ, what the difference costs: E2E, the extra tokens at the
// peer's TPOT (each is one more decode step); and in a closed loop at the
// same concurrency the rates, by Little's law (requests/s = C / E2E, so
// they scale as E2E / (E2E + its step), output tok/s with the length too).
func (x explainer) lengthStep(figs []ExplainFigure, ps Stage, src *Source) {
	if !src.Has("output_tokens") || ps.OK == 0 {
		return
	}
	mine := 0.0
	for _, r := range x.recs {
		mine += float64(r.OutputTokens)
	}
	mine /= float64(len(x.recs))
	theirs := float64(ps.OutputTokens) / float64(ps.OK)
	dn := theirs - mine
	per := summarize(x.tpots(), nil, nearestRank)[0]
	if math.Abs(dn) < 0.05 || math.IsNaN(per) {
		return
	}
	how := fmt.Sprintf("%+.1f tokens a request × %.3g ms, the mean TPOT under the peer's definition", dn, per)
	e2e, longer := x.meanE2E(), dn*per
	closed := ps.Rate == 0 && ps.Concurrency > 0 && x.recs[0].Rate == 0 && x.recs[0].Concurrency == ps.Concurrency
	for i := range figs {
		f := &figs[i]
		d, how := make([]float64, len(f.Stats)), how
		switch {
		case f.Figure == "E2E":
			for j := range d {
				d[j] = longer
			}
		case closed && (f.Figure == "requests/s" || f.Figure == "output tok/s"):
			v := f.Tokperf[0]
			for _, s := range f.Steps {
				v += s.Delta[0]
			}
			scale := e2e / (e2e + longer)
			if f.Figure == "output tok/s" {
				scale *= theirs / mine
			}
			d[0] = v*scale - v
			how = fmt.Sprintf("%s; at the same concurrency, requests/s = C / E2E (Little's law): × %.3g", how, e2e/(e2e+longer))
		default:
			continue
		}
		f.Steps = append(f.Steps, ExplainStep{Cause: "output lengths", Kind: KindWorkload, Delta: d, How: how})
	}
}

// meanE2E is the requests' mean E2E under the peer's definitions, in ms.
func (x explainer) meanE2E() float64 {
	f := defs{fromConnect: x.def.fromConnect, toDone: x.def.toDone}
	sum := 0.0
	for i := range x.recs {
		sum += record.Ms(end(&x.recs[i], f) - start(&x.recs[i], f))
	}
	return sum / float64(len(x.recs))
}

// tpots are the requests' TPOTs under the peer's definition: (E2E − TTFT)/(n − 1).
func (x explainer) tpots() []float64 {
	f := defs{fromConnect: x.def.fromConnect, toDone: x.def.toDone, perN1: true}
	var xs []float64
	for i := range x.recs {
		if v, ok := tpotOf(&x.recs[i], f); ok {
			xs = append(xs, v)
		}
	}
	return xs
}

// validity says how far tokperf's own chunk times may be late: the chunks
// its client read after more bytes had come (METRICS.md §1, buffered).
func validity(all []record.Record) []string {
	chunks, buffered := 0, 0
	for _, r := range all {
		if !r.Warmup && r.OK() {
			chunks += len(r.Chunks)
			buffered += r.Buffered
		}
	}
	if chunks == 0 {
		return nil
	}
	share := float64(buffered) / float64(chunks)
	out := []string{fmt.Sprintf("tokperf read %.1f%% of its token chunks late (buffered): their times, so ITL and E2E, are late by the client's lag", 100*share)}
	if share > 0.10 {
		out = append(out, "over 10%: tokperf's client fell behind, so a difference in ITL may be its lag, not a definition")
	}
	return append(out, "the peer's client lag is not in its file: its chunks are timed when its event loop reads them")
}
