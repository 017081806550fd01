package analyze

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/sim"
)

// overheadLevel simulates one level of tokperf overhead on a generated
// server whose two routes are identical: requests 2k and 2k+1 share a
// prompt and an output length, and the route each is labelled with
// alternates as the overhead's pairs do. The truth of every chat − raw
// difference is then 0.
func overheadLevel(t *testing.T, s abServer, c, n int, seed int64) []record.Record {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(seed), 41))
	jobs := make([]sim.Job, n)
	for i := 0; i < n; i += 2 {
		out := s.out/2 + r.IntN(s.out+1)
		in := s.in/2 + r.IntN(s.in+1)
		jobs[i] = sim.Job{PromptTokens: in, MaxTokens: out, Length: out}
		jobs[i+1] = jobs[i]
	}
	outs := sim.Simulate(s.profile(t, 1, seed), sim.Phase{Concurrency: c, Jobs: jobs})[0]
	var recs []record.Record
	for _, o := range outs {
		if o.Chunks < 2 {
			continue
		}
		rec := record.New(o.Job)
		rec.Concurrency = c
		rec.Endpoint = "raw"
		if (o.Job%2 == 1) != ((o.Job/2)%2 == 1) {
			rec.Endpoint = "chat"
		}
		rec.Scheduled, rec.Sent, rec.Done = o.Sent, o.Sent, o.Done
		rec.AddChunk(o.First.At, o.First.Tokens)
		rec.AddChunk(o.Last.At, o.Last.Tokens)
		rec.FirstByte, rec.FirstContent = rec.FirstToken, rec.FirstToken
		rec.OutputTokens = o.Tokens
		rec.OutputSource, rec.ChunkSource, rec.Status = record.SourceUsage, record.SourceContinuous, record.StatusOK
		recs = append(recs, rec)
	}
	return recs
}

// overheadTally runs levels of tokperf overhead's default size (2 ×
// max(4, 2C) requests) on identical routes of generated servers and
// counts, per figure, how often a cut called the difference significant,
// how often it gave an interval, and the median half width relative to
// the raw route's mean.
func overheadTally(t *testing.T, cases int, cuts []cut) {
	t.Helper()
	r := rand.New(rand.NewPCG(11, 41))
	type tally struct {
		n, sig, tested int
		widths         []float64
	}
	tl := map[string]*tally{}
	welch := cut{} // the per-request Welch t it replaced, for the log
	for range cases {
		s := genServer(r)
		c := []int{1, 2, 4, 8, 16}[r.IntN(5)]
		recs := overheadLevel(t, s, c, 2*max(4, 2*c), int64(r.Uint32()))
		for _, cu := range append([]cut{welch}, cuts...) {
			for _, f := range []struct {
				name string
				of   func(*record.Record) (float64, bool)
			}{
				{"TTFT", func(r *record.Record) (float64, bool) { d, ok := r.TTFT(); return record.Ms(d), ok }},
				{"TPOT", (*record.Record).TPOT},
			} {
				var d Diff
				if cu == welch {
					var a, b []float64
					for i := range recs {
						if v, ok := f.of(&recs[i]); ok && recs[i].Endpoint == "chat" {
							b = append(b, v)
						} else if ok {
							a = append(a, v)
						}
					}
					d.Value, d.HalfWidth = meanDiffWelch(a, b)
				} else {
					d = cu.diff(c, recs, "chat", f.of)
				}
				k := fmt.Sprintf("%s rounds %g", f.name, cu.rounds)
				if cu == welch {
					k = f.name + " per-request Welch"
				}
				if tl[k] == nil {
					tl[k] = &tally{}
				}
				x := tl[k]
				x.n++
				if !math.IsNaN(d.HalfWidth) {
					x.tested++
					var base []float64
					for i := range recs {
						if v, ok := f.of(&recs[i]); ok && recs[i].Endpoint == "raw" {
							base = append(base, v)
						}
					}
					x.widths = append(x.widths, d.HalfWidth/meanOf(base))
				}
				if d.Significant() {
					x.sig++
				}
			}
		}
	}
	t.Logf("%-26s %5s %8s %8s %9s", "figure / cut", "n", "signif", "tested", "±median")
	for _, k := range slices.Sorted(maps.Keys(tl)) {
		x := tl[k]
		t.Logf("%-26s %5d %7.1f%% %7.1f%% %8.1f%%", k, x.n, 100*float64(x.sig)/float64(x.n), 100*float64(x.tested)/float64(x.n), 100*median(x.widths))
		if k[4:] == fmt.Sprintf(" rounds %g", pairBlocking.rounds) {
			if share := float64(x.sig) / float64(x.n); share > 0.09 {
				t.Errorf("%s: identical routes called significantly different in %.1f%% of %d levels, want ≤ 9%%", k, 100*share, x.n)
			}
			if x.tested < x.n*9/10 {
				t.Errorf("%s: an interval in %d of %d levels of the default size, want ≥ 90%%", k, x.tested, x.n)
			}
		}
	}
}

// meanDiffWelch is the per-request interval the overhead used to give:
// every request an independent draw.
func meanDiffWelch(a, b []float64) (float64, float64) {
	ma, mb := meanOf(a), meanOf(b)
	va, vb := 0.0, 0.0
	for _, x := range a {
		va += (x - ma) * (x - ma)
	}
	for _, x := range b {
		vb += (x - mb) * (x - mb)
	}
	va, vb = va/float64(len(a)-1)/float64(len(a)), vb/float64(len(b)-1)/float64(len(b))
	return mb - ma, 1.96 * math.Sqrt(va+vb)
}

// TestOverheadIdenticalRoutes: on generated servers whose raw and chat
// routes are the same, the overhead's chat − raw TTFT and TPOT must be
// called significant at about the nominal 5% (at most 9% over the
// family), with an interval at the default level size. The per-request
// Welch t it replaced is logged beside it.
func TestOverheadIdenticalRoutes(t *testing.T) {
	t.Parallel()
	cases := 150
	if v := os.Getenv("TOKPERF_OVERHEAD_CASES"); v != "" {
		fmt.Sscan(v, &cases)
	}
	cuts := []cut{pairBlocking}
	if os.Getenv("TOKPERF_OVERHEAD_CUTS") != "" {
		cuts = append(cuts, cut{1, 10}, cut{2, 10})
	}
	overheadTally(t, cases, cuts)
}
