package analyze

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/summary"
)

// abServer is one generated server of the calibration family: its
// profile's YAML with every time scaled by a factor, and the workload its
// stages run.
type abServer struct {
	shape          string // linear, concave or convex step times
	a, c           float64
	jitter         float64
	prefillFixedMs float64
	prefillUs      float64
	chunk          int
	in, out        int
}

// genServer draws a server from the family: the step time's shape and
// size, its jitter (2–8%), prefill cost, chunking and lengths. None is a
// built-in profile.
func genServer(r *rand.Rand) abServer {
	return abServer{
		shape:          []string{"linear", "concave", "convex"}[r.IntN(3)],
		a:              2 + 18*r.Float64(),
		c:              0.05 + 1.2*r.Float64(),
		jitter:         0.02 + 0.06*r.Float64(),
		prefillFixedMs: 1 + 10*r.Float64(),
		prefillUs:      5 + 60*r.Float64(),
		chunk:          []int{512, 2048, 1 << 20}[r.IntN(3)],
		in:             50 + r.IntN(1500),
		out:            40 + r.IntN(300),
	}
}

// profile is the server with every time scaled by scale (1: as drawn),
// its jitter drawn from seed. Scaling every time stretches the whole
// closed-loop timeline, so the truth is known: aggregate and decode
// tok/s fall by the factor, TTFT grows by it.
func (s abServer) profile(t *testing.T, scale float64, seed int64) *sim.Profile {
	t.Helper()
	var dec string
	switch s.shape {
	case "linear":
		dec = fmt.Sprintf("linear: {a_ms: %g, c_ms: %g}", s.a*scale, s.c*scale)
	case "concave": // the per-sequence cost falls as the batch grows
		dec = fmt.Sprintf("table: [{batch: 1, step_ms: %g}, {batch: 16, step_ms: %g}, {batch: 128, step_ms: %g}]",
			s.a*scale, (s.a+16*s.c)*scale, (s.a+16*s.c+112*s.c/4)*scale)
	default: // convex: it grows past a knee
		dec = fmt.Sprintf("table: [{batch: 1, step_ms: %g}, {batch: 16, step_ms: %g}, {batch: 128, step_ms: %g}]",
			s.a*scale, (s.a+16*s.c/3)*scale, (s.a+16*s.c/3+112*s.c*2)*scale)
	}
	y := fmt.Sprintf(`name: gen
engine: vllm
context_length: 65536
max_running: 4096
kv_tokens: 100000000
chunked_prefill: %d
decode:
  %s
prefill:
  fixed_ms: %g
  per_token_us: %g
eos_probability: 0
jitter: %g
seed: %d
`, s.chunk, dec, s.prefillFixedMs*scale, s.prefillUs*scale, s.jitter, seed)
	p, err := sim.ParseProfile("gen.yaml", []byte(y))
	if err != nil {
		t.Fatalf("generated profile: %v\n%s", err, y)
	}
	return p
}

// abStage runs one closed-loop stage of the default size (max(100, 4×C)
// in whole rounds of C) in virtual time and folds its requests as a
// result file's would be.
func abStage(t *testing.T, s abServer, scale float64, c int, seed int64) *Stage {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	n := max(100, 4*c)
	n = (n + c - 1) / c * c
	jobs := make([]sim.Job, n)
	for i := range jobs {
		out := s.out/2 + r.IntN(s.out+1)
		jobs[i] = sim.Job{PromptTokens: s.in/2 + r.IntN(s.in+1), MaxTokens: out, Length: out}
	}
	outs := sim.Simulate(s.profile(t, scale, seed), sim.Phase{Concurrency: c, Jobs: jobs})[0]
	f := NewFold(record.Setup{}, "")
	f.KeepSamples()
	for i, o := range outs {
		if o.Chunks == 0 {
			continue
		}
		rec := record.New(i)
		rec.Concurrency = c
		rec.Scheduled, rec.Sent, rec.Done = o.Sent, o.Sent, o.Done
		rec.PromptTokens = jobs[o.Job].PromptTokens
		rec.AddChunk(o.First.At, o.First.Tokens)
		if o.Chunks > 1 {
			rec.AddChunk(o.Last.At, o.Last.Tokens)
		}
		rec.FirstByte, rec.FirstContent = rec.FirstToken, rec.FirstToken
		rec.OutputTokens = o.Tokens
		rec.OutputSource, rec.ChunkSource, rec.Status = record.SourceUsage, record.SourceContinuous, record.StatusOK
		f.Add(&rec)
	}
	run := f.Run()
	if len(run.Stages) != 1 {
		t.Fatalf("%d stages from one phase", len(run.Stages))
	}
	return &run.Stages[0]
}

// abTally counts, per figure and class of level, how often the A/B of a
// pair was called significant, how often its interval held the truth,
// and the widths.
type abTally struct {
	n, sig, tested, covered map[string]int
	widths                  map[string][]float64
}

func newTally() *abTally {
	return &abTally{n: map[string]int{}, sig: map[string]int{}, tested: map[string]int{}, covered: map[string]int{}, widths: map[string][]float64{}}
}

func levelClass(c int) string {
	switch {
	case c <= 4:
		return "C≤4"
	case c <= 16:
		return "C 8–16"
	}
	return "C 32–64"
}

func (ta *abTally) add(c int, ms []Metric, truth []float64) {
	for i, m := range ms {
		k := m.Name + " " + levelClass(c)
		ta.n[k]++
		if m.Significant {
			ta.sig[k]++
		}
		if math.IsNaN(m.Lo) {
			continue
		}
		ta.tested[k]++
		if m.Lo <= truth[i] && truth[i] <= m.Hi {
			ta.covered[k]++
		}
		ta.widths[k] = append(ta.widths[k], m.Resolves)
	}
}

func (ta *abTally) keys() []string {
	var ks []string
	for k := range ta.n {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	ys := slices.Clone(xs)
	slices.Sort(ys)
	return ys[len(ys)/2]
}

// abPairs is the number of generated pairs: 120 in CI, more with
// TOKPERF_AB_PAIRS.
func abPairs(t *testing.T) int {
	if v := os.Getenv("TOKPERF_AB_PAIRS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("TOKPERF_AB_PAIRS=%q: %v", v, err)
		}
		return n
	}
	return 120
}

var abLevels = []int{1, 2, 4, 8, 16, 32, 64}

// runFamily runs pairs of generated servers, B's times scaled by scale,
// each pair at three of abLevels, and tallies the A/Bs pair makes of them.
func runFamily(t *testing.T, pairs int, scale float64, seed uint64, pair func(a, b *Stage) []Metric) *abTally {
	t.Helper()
	ta := newTally()
	r := rand.New(rand.NewPCG(seed, 36))
	truth := []float64{1 / scale, 1 / scale, scale}
	for range pairs {
		s := genServer(r)
		levels := slices.Clone(abLevels)
		r.Shuffle(len(levels), func(i, j int) { levels[i], levels[j] = levels[j], levels[i] })
		for _, c := range levels[:3] {
			sa, sb := int64(r.Uint32()), int64(r.Uint32())
			a, b := abStage(t, s, 1, c, sa), abStage(t, s, scale, c, sb)
			ta.add(c, pair(a, b), truth)
		}
	}
	return ta
}

func (ta *abTally) log(t *testing.T, title string) {
	t.Helper()
	t.Logf("%s", title)
	t.Logf("%-28s %6s %9s %9s %9s %9s", "figure / levels", "n", "signif", "tested", "covered", "±median")
	for _, k := range ta.keys() {
		t.Logf("%-28s %6d %8.1f%% %8.1f%% %8.1f%% %8.1f%%", k, ta.n[k], 100*float64(ta.sig[k])/float64(ta.n[k]),
			100*float64(ta.tested[k])/float64(ta.n[k]), 100*float64(ta.covered[k])/float64(max(1, ta.tested[k])), 100*median(ta.widths[k]))
	}
}

// TestABIdenticalServers: pairs of identical jittered servers (generated,
// not built in; two seeds each for the jitter and the prompts) must be
// called significantly different at about the nominal 5%: at most 7%
// over every level and figure, at most 12% for any one.
func TestABIdenticalServers(t *testing.T) {
	t.Parallel()
	ta := runFamily(t, abPairs(t), 1, 1, Pair)
	ta.log(t, "identical servers")
	all, sig := 0, 0
	for _, k := range ta.keys() {
		all, sig = all+ta.n[k], sig+ta.sig[k]
		if share := float64(ta.sig[k]) / float64(ta.n[k]); share > 0.12 {
			t.Errorf("%s: %.1f%% of %d identical pairs called significant, want ≤ 12%%", k, 100*share, ta.n[k])
		}
	}
	if share := float64(sig) / float64(all); share > 0.07 {
		t.Errorf("%.1f%% of %d comparisons of identical servers called significant, want ≤ 7%%", 100*share, all)
	}
}

// TestABCoverage: pairs whose B is truly 3% and 10% slower (every time
// scaled) must have intervals that hold the true ratio in ≥ 90% of the
// cases where there is one.
func TestABCoverage(t *testing.T) {
	t.Parallel()
	for _, scale := range []float64{1.03, 1.10} {
		t.Run(fmt.Sprintf("%.2f", scale), func(t *testing.T) {
			t.Parallel()
			ta := runFamily(t, abPairs(t)/2, scale, 2, Pair)
			ta.log(t, fmt.Sprintf("B's times ×%.2f", scale))
			tested, covered := map[string]int{}, map[string]int{}
			for _, k := range ta.keys() {
				fig := k[:strings.LastIndex(k, " C")]
				tested[fig], covered[fig] = tested[fig]+ta.tested[k], covered[fig]+ta.covered[k]
			}
			for _, f := range abFigures {
				if tested[f.name] == 0 {
					t.Fatalf("%s: no comparison had an interval", f.name)
				}
				if share := float64(covered[f.name]) / float64(tested[f.name]); share < 0.90 {
					t.Errorf("%s: intervals held the truth in %.1f%% of %d, want ≥ 90%%", f.name, 100*share, tested[f.name])
				}
			}
		})
	}
}

// TestABCutByMeasurement compares ways to cut a stage into blocks on the
// same family (the measurement behind blocking); run it with
// TOKPERF_AB_CUTS=1.
func TestABCutByMeasurement(t *testing.T) {
	t.Parallel()
	if os.Getenv("TOKPERF_AB_CUTS") == "" {
		t.Skip("a measurement, not a check: set TOKPERF_AB_CUTS=1")
	}
	for _, cu := range []cut{{1, 10}, {0.5, 10}, {0.25, 10}, {2, 10}, {2, 20}, {4, 10}, {1, 20}} {
		ta := runFamily(t, abPairs(t), 1, 1, cu.pair)
		ta.log(t, fmt.Sprintf("rounds %g, at most %d blocks: identical", cu.rounds, cu.most))
		tb := runFamily(t, abPairs(t)/2, 1.03, 2, cu.pair)
		tb.log(t, fmt.Sprintf("rounds %g, at most %d blocks: ×1.03", cu.rounds, cu.most))
	}
}

// repeatRun is a run of one level repeated, each repeat's aggregate
// given; decode and TTFT follow it.
func repeatRun(file string, aggs ...float64) *Run {
	r := &Run{File: file}
	for i, a := range aggs {
		st := Stage{Stage: summary.Stage{Concurrency: 8, Repeat: i, Requests: 100, OK: 100, AggregateTokS: a}}
		st.DecodeTokS.P50, st.TTFT.P50 = a/10, 1000/a
		r.Stages = append(r.Stages, st)
	}
	return r
}

// compare of two --repeat runs pairs repeat i of A with repeat i of B: the
// repeats drift together (100, 200, 300 tok/s) and B is 10% above A in
// each, so the paired ratio is 1.10 with a narrow interval; against B's
// first repeat alone, as before, A's repeats read 3.3×, 1.65× and 1.1×.
func TestComparePairsRepeats(t *testing.T) {
	t.Parallel()
	a := repeatRun("a.jsonl", 100, 200, 300)
	b := repeatRun("b.jsonl", 110.5, 219.5, 330.2)
	c, err := Compare([]*Run{a, b}, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Stages) != 1 {
		t.Fatalf("%d rows for one level repeated 3 times, want 1", len(c.Stages))
	}
	for _, m := range c.Stages[0].Metrics[0] {
		if m.Unit != "repeats" || m.Units != 3 || !(m.Lo > 1 || m.Hi < 1) || !m.Significant {
			t.Errorf("%s: %+v, want 3 paired repeats and a significant ratio", m.Name, m)
		}
		truth := 1.1
		if m.Name == "TTFT p50 ms" {
			truth = 1 / 1.1
		}
		if !(m.Lo <= truth && truth <= m.Hi) || m.Hi/m.Lo > 1.05 {
			t.Errorf("%s: [%.3f, %.3f], want a narrow interval around %.3f", m.Name, m.Lo, m.Hi, truth)
		}
	}
	if r := c.Stages[0].Resolution[0]; !strings.Contains(r, "(3 paired repeats)") || !strings.Contains(r, "ask for more repeats") {
		t.Errorf("resolution %q", r)
	}
}

// The experiment's table rests on every repeat, paired, as compare does:
// its cell is the mean over the repeats (not repeat 1), a best is named
// only where it is significantly above the others, and a stage measured
// on a starved simulator is not judged in the table either.
func TestCompareConfigsRepeatsAndGates(t *testing.T) {
	t.Parallel()
	levels := []int{8}
	cfgs := func(a, b *Run) *Experiment {
		e := &Experiment{Configs: []ExperimentConfig{{Name: "seed", OK: true, Run: a}, {Name: "seed-mtp", OK: true, Run: b}}}
		e.CompareConfigs(levels)
		return e
	}
	e := cfgs(repeatRun("a", 100, 200, 300), repeatRun("b", 110.5, 219.5, 330.2))
	lv := e.Levels[0]
	if got := lv.Cells[1].AggregateTokS; math.Abs(got-(110.5+219.5+330.2)/3) > 1e-9 {
		t.Errorf("cell %.1f, want the mean over the repeats", got)
	}
	if c := lv.Cells[1]; !c.Significant || c.Unit != "repeats" || c.Units != 3 || c.Resolves == nil {
		t.Errorf("cell %+v, want a significant ratio over 3 paired repeats", c)
	}
	if lv.Best != "seed-mtp" {
		t.Errorf("best %q (%s), want seed-mtp", lv.Best, lv.NoBest)
	}
	if v := e.ComputeVerdicts().Configurations; !strings.Contains(v.Text, "(3 paired repeats)") {
		t.Errorf("configurations verdict does not say what it resolves: %s", v.Text)
	}
	// The same two, drifting apart by chance: no winner.
	e = cfgs(repeatRun("a", 100, 200, 300), repeatRun("b", 104, 192, 306))
	if lv := e.Levels[0]; lv.Best != "" || !strings.Contains(lv.NoBest, "do not differ significantly") || lv.Cells[1].Significant {
		t.Errorf("a winner named without a significant difference: %+v", lv)
	}
	// A starved stage: not judged, and no winner.
	b := repeatRun("b", 110.5, 219.5, 330.2)
	b.Stages[1].Server = &ServerReading{SimSteps: 1000, SimLateSteps: 500}
	e = cfgs(repeatRun("a", 100, 200, 300), b)
	if lv := e.Levels[0]; lv.Best != "" || lv.Cells[1].Withheld == "" || lv.Cells[1].Significant || lv.Cells[1].Ratio != nil {
		t.Errorf("a starved stage judged: %+v", lv)
	}
}

// Paired repeats over the same family: three repeats a side, repeat i
// of A against repeat i of B (PairRepeats), on identical servers and on a
// B truly 3% slower. The nominal 5% test holds its rate, and the interval
// its truth.
func TestABRepeatsCalibrated(t *testing.T) {
	t.Parallel()
	for _, scale := range []float64{1, 1.03} {
		t.Run(fmt.Sprintf("%.2f", scale), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(3, uint64(scale*100)))
			ta := newTally()
			truth := []float64{1 / scale, 1 / scale, scale}
			for range abPairs(t) / 2 {
				s := genServer(r)
				c := abLevels[r.IntN(len(abLevels))]
				var as, bs []*Stage
				for range 3 {
					as = append(as, abStage(t, s, 1, c, int64(r.Uint32())))
					bs = append(bs, abStage(t, s, scale, c, int64(r.Uint32())))
				}
				ta.add(c, PairRepeats(as, bs), truth)
			}
			ta.log(t, fmt.Sprintf("3 paired repeats, B's times ×%.2f", scale))
			all, sig, tested, covered := 0, 0, 0, 0
			for _, k := range ta.keys() {
				all, sig, tested, covered = all+ta.n[k], sig+ta.sig[k], tested+ta.tested[k], covered+ta.covered[k]
			}
			if share := float64(sig) / float64(all); scale == 1 && share > 0.07 {
				t.Errorf("%.1f%% of %d paired comparisons of identical servers called significant, want ≤ 7%%", 100*share, all)
			}
			if share := float64(covered) / float64(tested); share < 0.90 {
				t.Errorf("intervals held the truth in %.1f%% of %d, want ≥ 90%%", 100*share, tested)
			}
		})
	}
}
