package twin

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/summary"
)

// Fitted is a twin fitted to a run, ready to predict.
type Fitted struct {
	f     *fitter
	v     vector
	cov   [][]float64
	model analyze.Twin
	// misfit is each figure's relative RMS error over the measured
	// levels: the twin's own error, a floor of every interval.
	misfit []float64
	pool   []sim.Job // the run's requests, to predict with
	warmup int       // the run's warm-up rule: -1 one round, else a count
	maxC   int       // the largest measured level
	// held are the run's levels left out of the fit (Input.Only), by
	// concurrency: predictions there are set beside them.
	held map[int]*summary.Stage
	// known says which figures some fitted level measured.
	known []bool
	// shape is the step time's growths past the largest fitted batch.
	shape shape
	cost  float64 // the fit's weighted squared residuals
	// alts are fits under other limits the server did not state (chunk
	// sizes) that fit the levels nearly as well; capFree says the running
	// cap is unknown, so it may lie at the largest fitted level; capAt,
	// when set, is the cap a prediction assumes.
	alts    []*Fitted
	capFree bool
	capAt   int
	// kvHi, when set, is the largest KV pool the gauge allows; kvAt the
	// pool a prediction assumes.
	kvHi, kvAt int
}

func heldOut(in Input, lv []level) map[int]*summary.Stage {
	fitted := map[int]bool{}
	for _, l := range lv {
		fitted[l.c] = true
	}
	out := map[int]*summary.Stage{}
	for i := range in.Stages {
		st := &in.Stages[i].Stage
		if st.Concurrency > 0 && st.OK > 0 && st.Repeat == 0 && !fitted[st.Concurrency] {
			out[st.Concurrency] = st
		}
	}
	return out
}

// Model is the fit as a result model.
func (t *Fitted) Model() *analyze.Twin { return &t.model }

// Profile is the fitted profile.
func (t *Fitted) Profile() *sim.Profile { return t.f.profile(t.v) }

// goodFit is the mean squared weighted residual of a fit within the
// figures' own spread (two standard errors each).
const goodFit = 4

// Fit fits the simulator to the run's closed-loop levels. What the server
// neither stated nor showed is bracketed: an unknown prefill chunk is
// fitted under each of chunkSizes too, the best fit is the twin and the
// others that fit the levels nearly as well are kept (alts); an unknown
// running cap may lie anywhere above the largest fitted level (capFree).
// Predict's intervals span them all.
func Fit(in Input) (*Fitted, error) {
	lv, err := levels(in)
	if err != nil {
		return nil, err
	}
	base, k, notes := baseProfile(in, lv)
	t := fitBase(in, lv, base)
	t.f.capPinned = t.f.capPinned || k.cap // a stated cap holds past the fitted levels too
	t.capFree, t.kvHi = !k.cap, k.kvHi
	if !k.chunk {
		t = t.bracketChunks()
		notes = append(notes, t.chunkNote())
	}
	if t.capFree {
		notes = append(notes, fmt.Sprintf("the running cap is not known (not stated, and no level queued below its concurrency): predictions past C=%d span a cap there to none", t.maxC))
	}
	if len(t.f.xs) == 1 {
		notes = append(notes, fmt.Sprintf("one batch size measured (%d): how the step time grows with the batch is not pinned down, and other levels are predicted with it flat", t.f.xs[0]))
	}
	t.model = analyze.Twin{Schema: analyze.TwinSchema, File: in.File, Model: in.Setup.Model, Engine: base.Engine, Notes: append(in.Notes, notes...)}
	t.describe()
	t.model.Shape = &t.shape.model
	t.model.Notes = append(t.model.Notes, t.shape.model.Text)
	return t, nil
}

// fitBase fits the step times and prefill under base's limits.
func fitBase(in Input, lv []level, base *sim.Profile) *Fitted {
	q := 1
	if base.Spec != nil {
		q = base.Spec.Drafts + 1
	}
	f := &fitter{base: base, lv: lv, sigma: levelSpreads(lv, in.Spread), chat: in.Setup.Endpoint == "chat"}
	f.capPinned = base.MaxRunning < lv[len(lv)-1].c
	for _, l := range lv {
		x := min(l.c, base.MaxRunning) * q
		if len(f.xs) == 0 || f.xs[len(f.xs)-1] != x {
			f.xs = append(f.xs, x)
		}
	}
	// The lowest level's TTFT is the request's own overhead plus its
	// prefill, in a split only the higher levels tell: start from three.
	var v vector
	var j [][]float64
	best := math.Inf(1)
	for _, split := range []float64{0.5, 0, 1} {
		w, r, jw := f.solve(f.settle(f.start(q, split)))
		if c := cost(r); c < best {
			best, v, j = c, w, jw
		}
		if best <= goodFit*float64(len(r)) {
			break // within the figures' own spread: no better start to look for
		}
	}
	t := &Fitted{f: f, v: v, cov: covariance(j), cost: best, warmup: in.Setup.Load.Warmup, maxC: lv[len(lv)-1].c}
	for _, l := range lv {
		t.pool = append(t.pool, l.jobs...)
	}
	t.held = heldOut(in, lv)
	t.score()
	t.shape = t.readShape()
	return t
}

// chunkSizes are the prefill budgets an unstated chunk is bracketed by:
// llama.cpp's and small deployments' 512, vLLM's and SGLang's common 2048
// and 8192, and no chunking.
var chunkSizes = []int{512, 2048, 8192, unchunked}

// bracketChunks refits t under each chunk size from t's parameters and
// returns the best fit (the assumed chunk unless another halves its cost
// and more), the others that fit nearly as well as alts: a cost within
// twice the best's and the residuals' count (a chunk size the levels
// cannot tell from the best).
func (t *Fitted) bracketChunks() *Fitted {
	all := []*Fitted{t}
	for _, c := range chunkSizes {
		if c != t.f.base.ChunkedPrefill {
			all = append(all, t.variant(c))
		}
	}
	// The assumed chunk stays the estimate's unless another fits clearly
	// better: levels that cannot tell chunk sizes apart leave the prior.
	n := float64(len(t.f.lv) * len(figures))
	best := all[0]
	for _, a := range all {
		if a.cost+n < best.cost && a.cost < best.cost/2 {
			best = a
		}
	}
	best.alts = nil
	for _, a := range all {
		if a != best && a.cost <= 2*best.cost+n {
			best.alts = append(best.alts, a)
		}
	}
	best.capFree, best.kvHi = t.capFree, t.kvHi
	return best
}

// variant is t refitted with prefill chunks of c tokens, from t's
// parameters.
func (t *Fitted) variant(c int) *Fitted {
	f := *t.f
	b := *f.base
	b.ChunkedPrefill = c
	f.base = &b
	v, r, j := f.solve(slices.Clone(t.v))
	a := &Fitted{f: &f, v: v, cov: covariance(j), cost: cost(r), pool: t.pool, warmup: t.warmup, maxC: t.maxC, held: t.held, capFree: t.capFree, kvHi: t.kvHi}
	a.score()
	a.shape = a.readShape()
	return a
}

// chunkNote says which chunk sizes the twin fitted and kept.
func (t *Fitted) chunkNote() string {
	kept := []string{chunkName(t.f.base.ChunkedPrefill)}
	for _, a := range t.alts {
		kept = append(kept, chunkName(a.f.base.ChunkedPrefill))
	}
	return fmt.Sprintf("chunked_prefill is not stated by the server: fitted under each of 512, 2048, 8192 tokens and none; %s fit best, and predictions span %s", kept[0], strings.Join(kept, ", "))
}

func chunkName(c int) string {
	if c == unchunked {
		return "unchunked"
	}
	return fmt.Sprintf("%d tokens", c)
}

// start is the first guess: each level's step from its median TPOT (a
// step makes one verify's tokens), half the lowest level's TTFT the
// prompt's prefill and the rest the request's own overhead (a share
// split of it) and the prefill's fixed cost.
func (f *fitter) start(q int, split float64) vector {
	tau := 1.0
	if f.base.Spec != nil {
		tau = f.base.TokensPerStep()
	}
	var v vector
	last := 0
	for _, l := range f.lv {
		x := min(l.c, f.base.MaxRunning) * q
		if x == last {
			continue
		}
		last = x
		step := l.got.TPOT.P50 * tau
		if !(step > 0) {
			step = 10
		}
		v = append(v, math.Log(step))
	}
	low := f.lv[0]
	ttft := low.got.TTFT.P50
	if !(ttft > 0) {
		ttft = 10
	}
	prompt := max(float64(low.got.PromptTokens)/float64(max(low.got.OK, 1)), 1)
	v = append(v, math.Log(max(ttft/2/prompt*1e3, 1e-3)), ttft/2*split, ttft/2*(1-split))
	return v
}

// settle moves each level's step time by the ratio of its replayed to
// its measured decode tok/s, a few times over: decode speed is the
// inverse of the step time, so this lands the steps near where the full
// fit will put them for a replay each.
func (f *fitter) settle(v vector) vector {
	for range 3 {
		st := f.stages(v)
		last := -1
		for i, l := range f.lv {
			k := slices.Index(f.xs, min(l.c, f.base.MaxRunning)*f.q())
			if k < 0 || k == last {
				continue // a level sharing its batch with the one before
			}
			last = k
			if got, want := st[i].DecodeTokS.Mean, l.got.DecodeTokS.Mean; got > 0 && want > 0 {
				v[k] += math.Log(got / want)
			}
		}
		f.clamp(v)
	}
	return v
}

// q is the tokens verified per request per step.
func (f *fitter) q() int {
	if f.base.Spec != nil {
		return f.base.Spec.Drafts + 1
	}
	return 1
}

// names are the parameters' profile fields, units and sources.
func (f *fitter) names() (names, units, from []string) {
	for i, x := range f.xs {
		names = append(names, fmt.Sprintf("decode.table[batch %d].step_ms", x))
		units = append(units, "ms")
		from = append(from, fmt.Sprintf("decode tok/s at C=%d", f.lv[min(i, len(f.lv)-1)].c))
	}
	names = append(names, "prefill.per_token_us", "request_overhead_ms", "prefill.fixed_ms")
	units = append(units, "µs", "ms", "ms")
	from = append(from, "TTFT against the prompts batched at each level", "TTFT at the lowest level", "TTFT and decode tok/s together")
	return
}

// describe fills the model: parameters, levels, profile text.
func (t *Fitted) describe() {
	f := t.f
	names, units, from := f.names()
	n := f.nSteps()
	for k := range t.v {
		val, se := t.v[k], math.Inf(1)
		if t.cov != nil && t.cov[k][k] >= 0 {
			se = math.Sqrt(t.cov[k][k])
		}
		pinned := false
		if k <= n { // log parameters: se is relative
			val = math.Exp(val)
			se *= val
			pinned = se < 0.1*val
		} else {
			val = max(val, 0)
			pinned = se < max(0.25*val, 1)
		}
		t.model.Params = append(t.model.Params, analyze.TwinParam{Name: names[k], Unit: units[k], Value: val, SE: se, Pinned: pinned, From: from[k]})
		if !pinned {
			t.model.Notes = append(t.model.Notes, fmt.Sprintf("%s is not pinned down by these figures (%.3g ± %.2g %s)", names[k], val, se, units[k]))
		}
	}
	st := f.stages(t.v)
	for i, l := range f.lv {
		tl := analyze.TwinLevel{Concurrency: l.c, Requests: len(l.jobs)}
		for k, fig := range figures {
			if !t.known[k] {
				continue // a table's TTFT: nothing to set the twin's beside
			}
			m, g := fig.of(&l.got), fig.of(&st[i])
			tl.Figures = append(tl.Figures, analyze.TwinFigure{Name: fig.name, Measured: m, Twin: g, Error: g/m - 1})
		}
		t.model.Levels = append(t.model.Levels, tl)
	}
	t.model.Evaluations = f.evals
	t.model.Profile = profileYAML(t.Profile(), &t.model)
}

// score sets each figure's misfit over the fitted levels and which
// figures some level measured.
func (t *Fitted) score() {
	f := t.f
	st := f.stages(t.v)
	t.misfit = make([]float64, len(figures))
	t.known = make([]bool, len(figures))
	for _, l := range f.lv {
		for k, fig := range figures {
			t.known[k] = t.known[k] || fig.of(&l.got) > 0
		}
	}
	for i, l := range f.lv {
		for k, fig := range figures {
			if !t.known[k] {
				continue
			}
			if e := fig.of(&st[i])/fig.of(&l.got) - 1; !math.IsNaN(e) {
				t.misfit[k] += e * e
			}
		}
	}
	for k := range t.misfit {
		t.misfit[k] = math.Sqrt(t.misfit[k] / float64(len(f.lv)))
	}
}

// Options size the predicted levels.
type Options struct {
	// Requests is a level's measured requests (by concurrency); nil: the
	// run's own rule of max(100, 4×C).
	Requests func(c int) int
	// Limit stops a level's sends after this long (0: none).
	Limit time.Duration
}

func (o Options) size(c int) int {
	if o.Requests != nil {
		return o.Requests(c)
	}
	n := max(100, 4*c)
	return (n + c - 1) / c * c
}

// Predict is the twin's figures at levels cs, each with its interval: the
// fit's uncertainty carried through the replay (the delta method over the
// parameters' covariance), the twin's own error at the measured levels and
// the scatter of a measurement (the largest fitted level's), at 95%. Past
// the largest fitted level the interval also spans the step time's
// plausible growths (readShape): from the lowest of their predictions
// less that margin to the highest plus it; the estimate is the table's
// straight extension.
//
// Limits the server did not state widen it further: the interval spans
// the predictions of every chunk size that fits the levels (alts) and,
// when the running cap is unknown, those with a cap at the largest fitted
// level; the estimate stays the best fit's with no cap assumed.
func (t *Fitted) Predict(cs []int, o Options) []analyze.Predicted {
	scatter := t.scatterAt(cs, o)
	out := t.predictOne(cs, o, scatter)
	var others []*Fitted
	for _, a := range append([]*Fitted{t}, t.alts...) {
		if a != t {
			others = append(others, a)
		}
		if t.capFree {
			c := *a
			c.capAt = t.f.xs[len(t.f.xs)-1] / t.f.q()
			others = append(others, &c)
		}
		if t.kvHi > 0 {
			c := *a
			c.kvAt = t.kvHi
			others = append(others, &c)
		}
	}
	for _, a := range others {
		for i, p := range a.predictOne(cs, o, scatter) {
			for k := range p.Figures {
				e, g := &out[i].Figures[k], p.Figures[k]
				e.Lo, e.Hi = min(e.Lo, g.Lo), max(e.Hi, g.Hi)
			}
		}
	}
	return out
}

// predictOne is Predict under t's own limits; scatter is how a
// measurement at each level would scatter (scatterAt).
func (t *Fitted) predictOne(cs []int, o Options, scatter [][]float64) []analyze.Predicted {
	base := t.predictAt(t.v, cs, o)
	alt := t.growthsAt(cs, o)
	grads := make([][]summary.Stage, len(t.v))
	for k := range t.v {
		w := slices.Clone(t.v)
		w[k] += t.f.step(k, w[k])
		grads[k] = t.predictAt(w, cs, o)
	}
	out := make([]analyze.Predicted, len(cs))
	for i, c := range cs {
		p := analyze.Predicted{Concurrency: c, Requests: base[i].Requests, Beyond: c > t.maxC}
		if m := t.held[c]; m != nil {
			for k, fig := range figures {
				if t.known[k] {
					p.Measured = append(p.Measured, fig.of(m))
				}
			}
		}
		for k, fig := range figures {
			if !t.known[k] {
				continue // the fit never saw it: a prediction would be a guess
			}
			val := fig.of(&base[i])
			lo, hi := val, val
			var each []float64
			if len(alt[i]) > 0 {
				each = append(each, val)
				for _, st := range alt[i] {
					g := fig.of(&st)
					if !(g > 0) || math.IsInf(g, 0) {
						g = 0 // nothing measured under it: no part of the envelope
					} else {
						lo, hi = min(lo, g), max(hi, g)
					}
					each = append(each, g)
				}
			}
			g := make([]float64, len(t.v))
			for j := range t.v {
				g[j] = (math.Log(fig.of(&grads[j][i])) - math.Log(val)) / t.f.step(j, t.v[j])
			}
			// A measurement at the level would scatter as the largest
			// fitted level's did, or as replays of the level do, the more.
			noise := max(t.f.sigma[len(t.f.sigma)-1][k], scatter[i][k])
			v := t.misfit[k]*t.misfit[k] + noise*noise
			if t.cov != nil {
				for a := range g {
					for b := range g {
						v += g[a] * t.cov[a][b] * g[b]
					}
				}
			}
			half := 1.96 * math.Sqrt(max(v, 0))
			p.Figures = append(p.Figures, analyze.PredictedFigure{Name: fig.name, Estimate: analyze.Estimate{Value: val, Lo: lo * math.Exp(-half), Hi: hi * math.Exp(half)}, Growths: each})
		}
		out[i] = p
	}
	return out
}

// scatterDraws are the measurements scatterAt draws at each level.
const scatterDraws = 6

// scatterAt is how a measurement at each level of cs would scatter, per
// figure (the relative standard deviation of its log): the level replayed
// scatterDraws times, each with the profile's step jitter and requests
// drawn at random from the run's, as a run of the level draws its own.
func (t *Fitted) scatterAt(cs []int, o Options) [][]float64 {
	logs := make([][][]float64, len(cs)) // level, figure, draw
	for i := range logs {
		logs[i] = make([][]float64, len(figures))
	}
	for d := range scatterDraws {
		p := *t.f.profile(t.v)
		p.Seed = int64(d) + 2
		rng := rand.New(rand.NewPCG(uint64(d), 3))
		for i, st := range t.drawWith(&p, cs, o, record.SLO{}, rng) {
			for k, fig := range figures {
				if g := fig.of(&st); g > 0 {
					logs[i][k] = append(logs[i][k], math.Log(g))
				}
			}
		}
	}
	out := make([][]float64, len(cs))
	for i := range logs {
		for _, xs := range logs[i] {
			out[i] = append(out[i], sd(xs))
		}
	}
	return out
}

// sd is the sample standard deviation (0 for fewer than two).
func sd(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return math.Sqrt(v / float64(len(xs)-1))
}

// growthsAt replays each level of cs past the largest fitted one under
// every growth of the step time but the first (the estimate's), by level.
func (t *Fitted) growthsAt(cs []int, o Options) [][]summary.Stage {
	out := make([][]summary.Stage, len(cs))
	var past []int
	top := 0
	for _, c := range cs {
		if c > t.maxC {
			past = append(past, c)
			top = max(top, c)
		}
	}
	if len(past) == 0 {
		return out
	}
	p := t.f.profile(t.v)
	upTo := top * t.f.q()
	for _, g := range t.shape.growths[1:] {
		q := *p
		q.Decode.Table = g.extend(p.Decode.Table, upTo)
		st := t.predictWith(&q, past, o, record.SLO{})
		k := 0
		for i, c := range cs {
			if c > t.maxC {
				out[i] = append(out[i], st[k])
				k++
			}
		}
	}
	return out
}

// predictAt replays levels cs with the run's requests under parameters v.
func (t *Fitted) predictAt(v vector, cs []int, o Options) []summary.Stage {
	return t.predictAtSLO(v, cs, o, record.SLO{})
}

// predictAtSLO is predictAt counting goodput under slo.
func (t *Fitted) predictAtSLO(v vector, cs []int, o Options, slo record.SLO) []summary.Stage {
	return t.predictWith(t.f.profile(v), cs, o, slo)
}

// predictWith replays levels cs with the run's requests under profile prof.
func (t *Fitted) predictWith(prof *sim.Profile, cs []int, o Options, slo record.SLO) []summary.Stage {
	return t.drawWith(replayed(prof), cs, o, slo, nil)
}

// drawWith replays levels cs under p: each level the run's requests in
// their order, or, with rng, drawn from them at random.
func (t *Fitted) drawWith(p *sim.Profile, cs []int, o Options, slo record.SLO, rng *rand.Rand) []summary.Stage {
	if t.kvAt > 0 {
		p.KVTokens = t.kvAt
	}
	if t.capAt > 0 {
		p.MaxRunning = t.capAt
	} else if !t.f.capPinned {
		for _, c := range cs {
			p.MaxRunning = max(p.MaxRunning, c) // no cap was seen: none is assumed
		}
	}
	out := make([]summary.Stage, len(cs))
	for i, c := range cs {
		n := o.size(c)
		jobs := make([]sim.Job, n)
		for k := range jobs {
			if rng != nil {
				jobs[k] = t.pool[rng.IntN(len(t.pool))]
			} else {
				jobs[k] = t.pool[k%len(t.pool)]
			}
		}
		l := level{c: c, jobs: jobs, limit: o.Limit, slo: slo}
		switch {
		case t.warmup < 0:
			l.warm = jobs[:min(c, n)]
		case t.warmup > 0:
			l.warm = jobs[:min(t.warmup, n)]
		}
		out[i] = replay(p, &l, t.f.chat)
	}
	return out
}

// Replay replays the run's levels under profile p and sets each figure
// beside the measured one: how well a profile (a fitted one, a built-in
// one) describes a run.
func Replay(p *sim.Profile, in Input) ([]analyze.TwinLevel, error) {
	lv, err := levels(in)
	if err != nil {
		return nil, err
	}
	var out []analyze.TwinLevel
	for i := range lv {
		l := &lv[i]
		st := replay(replayed(p), l, in.Setup.Endpoint == "chat")
		tl := analyze.TwinLevel{Concurrency: l.c, Requests: len(l.jobs)}
		for _, fig := range figures {
			m, g := fig.of(&l.got), fig.of(&st)
			tl.Figures = append(tl.Figures, analyze.TwinFigure{Name: fig.name, Measured: m, Twin: g, Error: g/m - 1})
		}
		out = append(out, tl)
	}
	return out, nil
}

// LastRatio sizes a predicted level as the largest fitted level was
// sized, in requests per slot: for a table, whose levels' sizes are all
// it says of its runs.
func (t *Fitted) LastRatio() func(c int) int {
	l := t.f.lv[len(t.f.lv)-1]
	per := float64(len(l.jobs)) / float64(l.c)
	return func(c int) int { return max(int(math.Round(per*float64(c))), c) }
}
