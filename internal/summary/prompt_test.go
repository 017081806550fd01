package summary

import (
	"testing"

	"github.com/tokperf/tokperf/internal/record"
)

// A server that sends no prompt count (TGI ≤ 2.x native, LM Studio) still
// had prompts: input tok/s is what tokperf sent, counted as such, not 0;
// the server's count wins where it gave one (issue 37).
func TestPromptWhatWasSentWhereServerIsSilent(t *testing.T) {
	t.Parallel()
	var recs []record.Record
	for i := range 4 {
		r := req(0, 100*msec, 10*msec, 1, 1, 1)
		r.AskedPromptTokens, r.AskedPromptSource = 120, record.SourceTokenizer
		if i == 0 {
			r.PromptTokens, r.PromptSource = 130, record.SourceUsage // the server's own count
		}
		recs = append(recs, r)
	}
	s := Of(recs, 4)
	if s.PromptTokens != 130+3*120 || s.PromptSent != 3 {
		t.Errorf("prompt tokens %d (%d sent); want %d, 3 sent", s.PromptTokens, s.PromptSent, 130+3*120)
	}
	if want := float64(s.PromptTokens) / s.WallS; !near(s.InputTokS, want) || s.InputTokS == 0 {
		t.Errorf("input tok/s %g, want %g", s.InputTokS, want)
	}
}
