package analyze

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/stability"
	"github.com/tokperf/tokperf/internal/summary"
)

// Basis is what a verdict rests on: the stages it reads, by label, and,
// when any of them was not measured validly, why the verdict is withheld
// (docs/METRICS.md §5). A withheld verdict's text is "not judged: " and
// its measured cause in one short line; Detail holds every flaw's full
// account and what to do, for below the table. A flaw whose size is
// known and too small to change the verdict does not withhold it: Bound
// and Note then say how far the host may have moved the figures.
type Basis struct {
	Stages   []string `json:"stages"`
	Withheld string   `json:"withheld,omitempty"`
	Detail   string   `json:"detail,omitempty"`
	// Bound is the largest share by which a flaw that did not withhold the
	// verdict may have lowered the throughput it reads; Note says which.
	Bound float64 `json:"bound,omitempty"`
	Note  string  `json:"note,omitempty"`
	// Size is the withholding flaw's size (+Inf: it has none), to rank
	// the reasons of several runs.
	Size float64 `json:"-"`
}

// Judged says whether the verdict stands: no basis (nothing to gate) or
// one with no reason to withhold it.
func (b *Basis) Judged() bool { return b == nil || b.Withheld == "" }

// Within is how a verdict that stands despite a bounded flaw says so:
// " (a bound of 3.0% from the host: C=16's simulator ran 3.0% behind its
// pace)";
// empty when no flaw touched it.
func (b *Basis) Within() string {
	if b == nil || b.Note == "" {
		return ""
	}
	return " (" + b.Note + ")"
}

// NotJudged is how a withheld verdict reads in every format.
func NotJudged(reason string) string { return "not judged: " + reason }

// Flaw kinds: why a stage cannot carry a verdict.
const (
	FlawStarved = "starved_simulator" // the embedded simulator fell behind real time
	FlawLag     = "client_lag"        // the client lagged (its queue, late sends or late reads)
	FlawFew     = "too_few"           // fewer finished requests than the figure needs
	FlawFailed  = "all_failed"        // no request finished ok
	FlawKernel  = "kernel_drops"      // the client's own connections resent segments (loopback stalls)
)

// Flaw is one reason a stage's figures may not carry a verdict.
type Flaw struct {
	Stage string
	Kind  string
	Text  string // "C=16 was measured on a starved simulator (20.5% of its steps late)"
	// Size bounds how much the flaw may have lowered the stage's
	// throughput, as a share (0.03: the true figure is at most 1/(1−0.03)
	// of the measured); +Inf where it has no bound (too few requests, an
	// old file without the measure).
	Size float64
	// Cause is the flaw in a few words with its measure: "C=16's simulator
	// ran 12% behind its pace".
	Cause string
}

// DefaultTolerance is the bound up to which a flaw leaves standing a
// verdict that computes no distance of its own (an experiment's verdicts,
// the twin's fit): the few percent the figures of a lightly loaded run
// move between two runs anyway.
const DefaultTolerance = 0.05

// KernelStall is the least one retransmitted segment stalls its request
// on loopback: Linux's minimum retransmission timeout.
const KernelStall = 200 * time.Millisecond

// flaws are a run's per-stage reasons to withhold a verdict, by stage
// label, each with its size where it is measured: the simulator's
// lateness, the client's wait, the client's own connections' resends,
// and the stage's own counts.
func flaws(r *Run) map[string][]Flaw {
	lag := map[string]bool{}
	for _, w := range r.Warnings {
		if w.Check == "client_lag" || w.Check == "shard_client_lag" {
			lag[w.Stage] = true
		}
	}
	out := map[string][]Flaw{}
	for i := range r.Stages {
		s := &r.Stages[i]
		l := Label(s.Stage)
		add := func(kind string, size float64, cause, format string, args ...any) {
			out[l] = append(out[l], Flaw{Stage: l, Kind: kind, Size: size, Cause: cause, Text: fmt.Sprintf(format, args...)})
		}
		if sv := s.Server; sv != nil && sv.SimSteps > 0 && sv.SimLateSteps > SimLateLimit*sv.SimSteps {
			late := 100 * sv.SimLateSteps / sv.SimSteps
			size, cause, more := math.Inf(1), fmt.Sprintf("%s's simulator ran %.1f%% of its steps late", l, late), ""
			if b, ok := sv.Behind(); ok {
				size = b
				cause = fmt.Sprintf("%s's simulator ran %.1f%% behind its pace", l, 100*b)
				more = fmt.Sprintf(", %.1f%% behind its pace", 100*b)
			}
			add(FlawStarved, size, cause, "%s was measured on a starved simulator (%.1f%% of its steps late%s)", l, late, more)
		}
		if h := s.Host; h != nil && h.Retrans >= OwnRetransMin && float64(h.Retrans) > RetransLimit*float64(max(s.Requests, 1)) {
			size := 1.0
			if w := h.Len().Seconds(); w > 0 && s.Concurrency > 0 {
				size = min(1, float64(h.Retrans)*KernelStall.Seconds()/(float64(s.Concurrency)*w))
			}
			add(FlawKernel, size, fmt.Sprintf("the client's connections resent %d TCP segments at %s", h.Retrans, l),
				"%s was measured while the client's own connections resent %d TCP segments: stalls of 200 ms or more in up to %.1f%% of its requests", l, h.Retrans, 100*min(1, float64(h.Retrans)/float64(max(s.Requests, 1))))
		}
		if lag[l] {
			size, cause := lagSize(r, s)
			add(FlawLag, size, cause, "the client lagged at %s (its client_lag warning)", l)
		}
		switch {
		case s.Requests > s.Cancelled && s.OK == 0:
			add(FlawFailed, math.Inf(1), "every request at "+l+" failed", "every request at %s failed", l)
		case s.Rate == 0 && s.Concurrency > 0 && s.OK > 0 && s.OK < s.Concurrency:
			add(FlawFew, math.Inf(1), fmt.Sprintf("%s finished %d requests for %d slots", l, s.OK, s.Concurrency), "%s finished %d requests ok, fewer than its %d slots", l, s.OK, s.Concurrency)
		}
	}
	return out
}

// OwnRetransMin is the fewest segments the client's own connections must
// resend in a stage to make a flaw: one is a stall in one request.
const OwnRetransMin = 2

// lagSize is the client's lag at a closed-loop stage as a share of the
// slots' time (its wait over wait and request), which is the share by
// which the load, and so the throughput, fell; unbounded for an open
// loop's late sends. Chunks read late from the client's buffer delay
// their times, not the tokens delivered: size 0 for throughput.
func lagSize(r *Run, s *Stage) (float64, string) {
	l := Label(s.Stage)
	if s.Rate == 0 && !r.OpenLoop {
		if q := s.ClientWait; q.N > 0 && s.OK > 0 {
			share := q.Mean / (q.Mean + s.E2E.Mean)
			if share > ClientWaitLimit {
				return share, fmt.Sprintf("the client made %s's requests wait %.1f%% of the slots' time", l, 100*share)
			}
		}
		if s.BufferedShare > BufferedLimit {
			return 0, fmt.Sprintf("the client read %.0f%% of %s's chunks late", 100*s.BufferedShare, l)
		}
	}
	return math.Inf(1), "the client lagged at " + l
}

// advice is what to do about the flaws found.
func advice(fs []Flaw) string {
	var do []string
	for _, f := range fs {
		var a string
		switch f.Kind {
		case FlawStarved:
			a = "rerun on a quieter machine, or the embedded simulator in virtual time (--virtual)"
		case FlawKernel:
			a = "raise net.core.netdev_max_backlog or spread the streams over more machines (--shard)"
		case FlawLag:
			a = "rerun on a quieter machine or spread the load over more clients (--shard)"
		case FlawFew:
			a = "run more requests per level (--requests)"
		case FlawFailed:
			a = "fix what made the requests fail"
		}
		if !slices.Contains(do, a) {
			do = append(do, a)
		}
	}
	return strings.Join(do, "; ")
}

// basis is the basis of a verdict over the stages labelled, withheld for
// any flaw of the kinds asked (all kinds when none are named), whatever
// its size: for callers that judge no distance (compare's per-stage gate).
func basis(all map[string][]Flaw, labels []string, kinds ...string) *Basis {
	return bounded(all, labels, func([]Flaw) bool { return true }, kinds...)
}

// within is the decision of a verdict that only a move of tol or more in
// a stage's throughput could change.
func within(tol float64) func([]Flaw) bool {
	return func(fs []Flaw) bool {
		return slices.ContainsFunc(fs, func(f Flaw) bool { return f.Size >= tol })
	}
}

// bounded is the basis of a verdict over the stages labelled: a flaw of
// the kinds asked (all when none are named) without a size withholds it;
// flaws with sizes withhold it when could says that figures moved by
// their sizes could change it, and are otherwise stated as its bound.
func bounded(all map[string][]Flaw, labels []string, could func([]Flaw) bool, kinds ...string) *Basis {
	b := &Basis{Stages: labels}
	var unbounded, sized []Flaw
	for _, l := range labels {
		for _, f := range all[l] {
			switch {
			case len(kinds) > 0 && !slices.Contains(kinds, f.Kind):
			case math.IsInf(f.Size, 1):
				unbounded = append(unbounded, f)
			default:
				sized = append(sized, f)
			}
		}
	}
	found := unbounded
	if len(sized) > 0 && (len(unbounded) > 0 || could(sized)) {
		found = append(found, sized...)
	} else if len(sized) > 0 {
		worst := slices.MaxFunc(sized, func(a, b Flaw) int { return cmpFloat(a.Size, b.Size) })
		b.Bound = worst.Size
		b.Note = fmt.Sprintf("a bound of %.1f%% from the host: %s", 100*worst.Size, worst.Cause)
	}
	if len(found) == 0 {
		return b
	}
	worst := slices.MaxFunc(found, func(a, b Flaw) int { return cmpFloat(a.Size, b.Size) })
	b.Withheld, b.Size = worst.Cause, worst.Size
	if !math.IsInf(worst.Size, 1) {
		b.Withheld += ", enough to change it"
	}
	var why []string
	for _, f := range found {
		why = append(why, f.Text)
	}
	b.Detail = strings.Join(why, "; ") + "; " + advice(found)
	return b
}

// sizes are the largest finite flaw size of each closed-loop level among
// fs, by concurrency.
func (r *Run) sizes(fs []Flaw) map[int]float64 {
	conc := map[string]int{}
	for _, s := range r.Stages {
		if s.Rate == 0 {
			conc[Label(s.Stage)] = s.Concurrency
		}
	}
	out := map[int]float64{}
	for _, f := range fs {
		if c, ok := conc[f.Stage]; ok && !math.IsInf(f.Size, 1) {
			out[c] = max(out[c], f.Size)
		}
	}
	return out
}

// moved calls judge with the run's levels, each level of bound (by
// concurrency) either as measured or with its throughput raised to what a
// flaw of that size may have hidden (a flaw only ever lowers it), in every
// combination, and says whether any call returns true. Over 10 flawed
// levels it does not try, and says true.
func (r *Run) moved(bound map[int]float64, judge func([]summary.Stage) bool) bool {
	cs := slices.Sorted(maps.Keys(bound))
	if len(cs) > 10 {
		return true
	}
	levels := r.levels()
	for mask := 1; mask < 1<<len(cs); mask++ {
		lv := slices.Clone(levels)
		for i := range lv {
			for k, c := range cs {
				if mask&(1<<k) != 0 && lv[i].Rate == 0 && lv[i].Concurrency == c {
					lv[i].AggregateTokS /= 1 - min(bound[c], 0.99)
				}
			}
		}
		if judge(lv) {
			return true
		}
	}
	return false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// labelsAt are the labels of the run's closed-loop stages at the levels
// given, every repeat of each.
func (r *Run) labelsAt(levels ...int) []string {
	var out []string
	for _, s := range r.Stages {
		if s.Rate == 0 && slices.Contains(levels, s.Concurrency) {
			out = append(out, Label(s.Stage))
		}
	}
	return out
}

// closedLabels are the labels of every closed-loop stage of the run.
func (r *Run) closedLabels() []string {
	var out []string
	for _, s := range r.Stages {
		if s.Rate == 0 && s.Concurrency > 0 {
			out = append(out, Label(s.Stage))
		}
	}
	return out
}

// Superlinear says whether a step's efficiency reads above 100%: a
// batching server cannot deliver more than linear scaling, so such a step
// says the lower level was held back, not how the server scales.
func (st *Step) Superlinear() bool { return math.Round(100*st.Efficiency) > 100 }

// gate names what each of the run's verdicts rests on and withholds those
// resting on a stage that was not measured validly: the scaling verdict
// and each of its steps, and each stage's stability verdict.
func (r *Run) gate() {
	all := flaws(r)
	if v := r.Verdict; v != nil && v.Kind != "single" {
		v.gate(r, all)
	}
	var keep []Warning
	withheld := map[string]bool{}
	for i := range r.Stages {
		s := &r.Stages[i]
		if s.Stability == nil {
			continue
		}
		l := Label(s.Stage)
		// A host that took less than DriftMin of the throughput cannot make
		// a drift of DriftMin.
		s.StabilityBasis = bounded(all, []string{l}, within(stability.DriftMin), FlawStarved, FlawKernel, FlawLag, FlawFailed)
		if !s.StabilityBasis.Judged() {
			s.Stability.Kind, s.Stability.Text = "not_judged", NotJudged(s.StabilityBasis.Withheld)
			withheld[l] = true
		} else {
			s.Stability.Text += s.StabilityBasis.Within()
		}
	}
	for _, w := range r.Warnings {
		if w.Check == "stability" && withheld[w.Stage] {
			continue // its verdict is withheld, and says why
		}
		keep = append(keep, w)
	}
	if keep == nil {
		keep = []Warning{}
	}
	r.Warnings = keep
}

// gate withholds the scaling verdict when a flaw of a level it reads has
// no size, or sizes that could change its kind (the scaling judged again
// with the flawed levels' throughput raised by them), or the step it rests
// on scaled above linear, and each step likewise; a verdict that stands
// despite flaws says its bound.
func (v *ScalingVerdict) gate(r *Run, all map[string][]Flaw) {
	kind := v.Kind
	v.Basis = bounded(all, r.closedLabels(), func(fs []Flaw) bool {
		return r.moved(r.sizes(fs), func(lv []summary.Stage) bool { return Scaling(lv).Kind != kind })
	})
	for i := range v.Steps {
		st := &v.Steps[i]
		class := stepClass(st.TokSGain, st.ConcGain)
		b := bounded(all, r.labelsAt(st.From, st.To), func(fs []Flaw) bool {
			return r.moved(r.sizes(fs), func(lv []summary.Stage) bool {
				a, z := levelIn(lv, st.From), levelIn(lv, st.To)
				return a > 0 && z > 0 && stepClass(z/a, st.ConcGain) != class
			})
		})
		switch {
		case !b.Judged():
			st.Withheld = b.Withheld
		case st.Superlinear():
			// A batching server cannot scale above linear: the lower level
			// was held back (a busy machine, the client, a stage too short
			// for its ramp).
			st.Withheld = fmt.Sprintf("C=%d was held back: %.2f× tok/s for %.2g× concurrency is above linear (%s)",
				st.From, st.TokSGain, st.ConcGain, pct(100*st.Efficiency, false)+" efficiency")
		default:
			st.Text += b.Within()
		}
		if st.Withheld != "" {
			st.Text = fmt.Sprintf("C=%d→%d: %s", st.From, st.To, NotJudged(st.Withheld))
		}
	}
	if v.Basis.Judged() && len(v.Steps) > 0 {
		if last := v.Steps[len(v.Steps)-1]; last.Withheld != "" {
			v.Basis.Withheld = last.Withheld // the verdict is read off its last step
			v.Basis.Bound, v.Basis.Note = 0, ""
		}
	}
	if v.Basis.Judged() {
		v.Text += v.Basis.Within()
		return
	}
	v.Kind, v.Text = "not_judged", NotJudged(v.Basis.Withheld)
	v.Change, v.PerDoubling, v.Peak, v.Knee, v.Saturated, v.Noise = 0, 0, 0, 0, 0, 0
}

// stepClass is what a step says: whether it gained Saturation or more per
// doubling. (A bound that would lift a step above linear changes nothing:
// a batching server cannot get there, so the bound is loose, not the step.)
func stepClass(gain, conc float64) bool {
	return math.Pow(gain, 1/math.Log2(conc))-1 >= Saturation
}

// levelIn is the aggregate tok/s of closed-loop level c among lv.
func levelIn(lv []summary.Stage, c int) float64 {
	for _, s := range lv {
		if s.Rate == 0 && s.Concurrency == c && s.OK > 0 {
			return s.AggregateTokS
		}
	}
	return 0
}

// Withheld lists the verdicts of the run that are withheld, each with its
// reason ("verdict: …", "stability C=8: …", "twin: …"); empty when every
// verdict stands (--strict exits 5 otherwise).
func (r *Run) Withheld() []string {
	var out []string
	if v := r.Verdict; v != nil {
		if !v.Basis.Judged() {
			out = append(out, "verdict: "+v.Basis.Withheld)
		} else {
			for _, st := range v.Steps {
				if st.Withheld != "" {
					out = append(out, fmt.Sprintf("scaling C=%d→%d: %s", st.From, st.To, st.Withheld))
				}
			}
		}
	}
	for _, s := range r.Stages {
		if !s.StabilityBasis.Judged() {
			out = append(out, "stability "+Label(s.Stage)+": "+s.StabilityBasis.Withheld)
		}
	}
	if r.Twin != nil && !r.Twin.Basis.Judged() {
		out = append(out, "twin: "+r.Twin.Basis.Withheld)
	}
	return append(out, r.Shape.withheld()...)
}

// GateTwin names the measured levels a twin fitted to this run rests on
// and withholds its predictions, SLO capacity and verdict when any of them
// was not measured validly (starved, the client lagging, too few requests).
func (r *Run) GateTwin(t *Twin) {
	if t == nil {
		return
	}
	var levels []int
	for _, l := range t.Levels {
		levels = append(levels, l.Concurrency)
	}
	t.Basis = r.BasisAt(levels)
	if t.Basis.Judged() {
		return
	}
	if t.SLO != nil {
		t.SLO.Text = NotJudged(t.Basis.Withheld)
	}
	if t.Verdict != "" {
		t.Verdict = NotJudged(t.Basis.Withheld)
	}
}

// BasisAt is the basis of a judgement resting on the run's closed-loop
// levels given (every repeat of each), withheld for any flaw of theirs:
// what a twin fitted to those levels rests on.
func (r *Run) BasisAt(levels []int) *Basis {
	return bounded(flaws(r), r.labelsAt(levels...), within(DefaultTolerance))
}
