package summary

import (
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
)

// Turn is the figures of one turn of a stage's conversations, over its ok
// requests that streamed a token: as the history grows, prompts lengthen
// and a prefix cache serves more of them.
type Turn struct {
	Turn int        `json:"turn"` // from 1
	OK   int        `json:"ok"`
	TTFT stats.Dist `json:"ttft_ms"`
	// MeanPromptTokens and MeanCachedTokens are per request, as the
	// server counted them (cached: where it reports its prefix cache).
	MeanPromptTokens float64 `json:"mean_prompt_tokens"`
	MeanCachedTokens float64 `json:"mean_cached_tokens"`
}

type turnAcc struct {
	ttft           []float64
	prompt, cached int
}

// turn adds an ok request's TTFT to its turn's, if it is one.
func (a *Acc) turn(r *record.Record, ttft float64) {
	if r.Turn <= 0 {
		return
	}
	for len(a.turns) < r.Turn {
		a.turns = append(a.turns, turnAcc{})
	}
	t := &a.turns[r.Turn-1]
	t.ttft = append(t.ttft, ttft)
	prompt, _ := r.Prompt()
	t.prompt += prompt
	t.cached += r.CachedTokens
}

func (a *Acc) turnFigures() []Turn {
	var out []Turn
	for i, t := range a.turns {
		n := len(t.ttft)
		if n == 0 {
			continue
		}
		out = append(out, Turn{Turn: i + 1, OK: n, TTFT: stats.Describe(t.ttft),
			MeanPromptTokens: float64(t.prompt) / float64(n), MeanCachedTokens: float64(t.cached) / float64(n)})
	}
	return out
}
