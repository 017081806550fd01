package analyze

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Basis is what a verdict rests on: the stages it reads, by label, and,
// when any of them was not measured validly, why the verdict is withheld
// (docs/METRICS.md §5). A withheld verdict's text is "not judged: " and
// the reason; its figures are still in the model, but it states no finding.
type Basis struct {
	Stages   []string `json:"stages"`
	Withheld string   `json:"withheld,omitempty"`
}

// Judged says whether the verdict stands: no basis (nothing to gate) or
// one with no reason to withhold it.
func (b *Basis) Judged() bool { return b == nil || b.Withheld == "" }

// NotJudged is how a withheld verdict reads in every format.
func NotJudged(reason string) string { return "not judged: " + reason }

// Flaw kinds: why a stage cannot carry a verdict.
const (
	FlawStarved = "starved_simulator" // the embedded simulator fell behind real time
	FlawLag     = "client_lag"        // the client lagged (its queue, late sends or late reads)
	FlawFew     = "too_few"           // fewer finished requests than the figure needs
	FlawFailed  = "all_failed"        // no request finished ok
	FlawKernel  = "kernel_drops"      // the kernel resent segments of over 1% of the requests (loopback stalls)
)

// Flaw is one reason a stage's figures cannot carry a verdict.
type Flaw struct {
	Stage string
	Kind  string
	Text  string // "C=16 was measured on a starved simulator (20.5% of its steps late)"
}

// flaws are a run's per-stage reasons to withhold a verdict, by stage
// label, from what the run already knows: the server reading's late steps,
// the client-lag warnings, and the stage's own counts.
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
		add := func(kind, format string, args ...any) {
			out[l] = append(out[l], Flaw{Stage: l, Kind: kind, Text: fmt.Sprintf(format, args...)})
		}
		if sv := s.Server; sv != nil && sv.SimSteps > 0 && sv.SimLateSteps > SimLateLimit*sv.SimSteps {
			add(FlawStarved, "%s was measured on a starved simulator (%.1f%% of its steps late)", l, 100*sv.SimLateSteps/sv.SimSteps)
		}
		if sv := s.Server; sv != nil && sv.kernelStalled(s.Requests) {
			add(FlawKernel, "%s was measured while the kernel resent %.0f TCP segments (%.0f dropped packets): stalls of 200 ms or more in up to %.1f%% of its requests", l, sv.HostRetrans, sv.HostDropped, 100*min(1, sv.HostRetrans/float64(max(s.Requests, 1))))
		}
		if lag[l] {
			add(FlawLag, "the client lagged at %s (its client_lag warning)", l)
		}
		switch {
		case s.Requests > s.Cancelled && s.OK == 0:
			add(FlawFailed, "every request at %s failed", l)
		case s.Rate == 0 && s.Concurrency > 0 && s.OK > 0 && s.OK < s.Concurrency:
			add(FlawFew, "%s finished %d requests ok, fewer than its %d slots", l, s.OK, s.Concurrency)
		}
	}
	return out
}

// advice is what to do about the flaws found.
func advice(fs []Flaw) string {
	var do []string
	for _, f := range fs {
		var a string
		switch f.Kind {
		case FlawStarved:
			a = "rerun on a quieter machine"
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
// the flaws of the kinds asked (all kinds when none are named).
func basis(all map[string][]Flaw, labels []string, kinds ...string) *Basis {
	b := &Basis{Stages: labels}
	var found []Flaw
	for _, l := range labels {
		for _, f := range all[l] {
			if len(kinds) == 0 || slices.Contains(kinds, f.Kind) {
				found = append(found, f)
			}
		}
	}
	if len(found) > 0 {
		var why []string
		for _, f := range found {
			why = append(why, f.Text)
		}
		b.Withheld = strings.Join(why, "; ") + "; " + advice(found)
	}
	return b
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
		s.StabilityBasis = basis(all, []string{l}, FlawStarved, FlawKernel, FlawLag, FlawFailed)
		if !s.StabilityBasis.Judged() {
			s.Stability.Kind, s.Stability.Text = "not_judged", NotJudged(s.StabilityBasis.Withheld)
			withheld[l] = true
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

// gate withholds the scaling verdict when a level it reads is flawed or
// the step it rests on scaled above linear, and each step likewise.
func (v *Verdict) gate(r *Run, all map[string][]Flaw) {
	v.Basis = basis(all, r.closedLabels())
	for i := range v.Steps {
		st := &v.Steps[i]
		b := basis(all, r.labelsAt(st.From, st.To))
		switch {
		case !b.Judged():
			st.Withheld = b.Withheld
		case st.Superlinear():
			st.Withheld = fmt.Sprintf("%.2f× tok/s for %.2g× concurrency is above linear scaling (an efficiency of %s), which a batching server cannot deliver: C=%d was held back (a busy machine, the client, or a stage too short for its ramp); rerun with more requests per level on a quieter machine",
				st.TokSGain, st.ConcGain, pct(100*st.Efficiency, false), st.From)
		}
		if st.Withheld != "" {
			st.Text = fmt.Sprintf("C=%d→%d: %s", st.From, st.To, NotJudged(st.Withheld))
		}
	}
	if v.Basis.Judged() && len(v.Steps) > 0 {
		if last := v.Steps[len(v.Steps)-1]; last.Withheld != "" {
			v.Basis.Withheld = last.Withheld // the verdict is read off its last step
		}
	}
	if v.Basis.Judged() {
		return
	}
	v.Kind, v.Text = "not_judged", NotJudged(v.Basis.Withheld)
	v.Change, v.PerDoubling, v.Peak, v.Knee, v.Saturated, v.Noise = 0, 0, 0, 0, 0, 0
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
	return out
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
func (r *Run) BasisAt(levels []int) *Basis { return basis(flaws(r), r.labelsAt(levels...)) }
