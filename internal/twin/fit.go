package twin

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// figure is one stage figure the fit matches.
type figure struct {
	name string
	of   func(s *summary.Stage) float64
	// spread is the figure's relative standard error from a level's
	// requests (the bootstrap or the mean's SE).
	spread func(rs []Request, rng *rand.Rand) float64
}

var figures = []figure{
	{"aggregate tok/s", func(s *summary.Stage) float64 { return s.AggregateTokS },
		func(rs []Request, _ *rand.Rand) float64 {
			return meanSE(rs, func(r Request) float64 { return r.RequestTokS })
		}},
	{"decode tok/s", func(s *summary.Stage) float64 { return s.DecodeTokS.Mean },
		func(rs []Request, _ *rand.Rand) float64 {
			return meanSE(rs, func(r Request) float64 { return r.DecodeTokS })
		}},
	{"TTFT p50 ms", func(s *summary.Stage) float64 { return s.TTFT.P50 },
		func(rs []Request, rng *rand.Rand) float64 { return medianSE(rs, rng) }},
	{"TTFT mean ms", func(s *summary.Stage) float64 { return s.TTFT.Mean },
		func(rs []Request, _ *rand.Rand) float64 {
			return meanSE(rs, func(r Request) float64 { return r.TTFTMs })
		}},
}

// minSpread is the least relative error a figure is weighted by: the
// twin's own fidelity to the served simulator, and a floor for levels
// whose requests are all alike.
const minSpread = 0.005

func meanSE(rs []Request, v func(Request) float64) float64 {
	var xs []float64
	for _, r := range rs {
		if x := v(r); x > 0 {
			xs = append(xs, x)
		}
	}
	if len(xs) < 2 {
		return 1
	}
	m, half, _ := stats.MeanCI(xs)
	if m <= 0 {
		return 1
	}
	return max(half/1.96/m, minSpread)
}

// medianSE is the relative spread of the median TTFT over 200 bootstrap
// resamples of the level's requests.
func medianSE(rs []Request, rng *rand.Rand) float64 {
	var xs []float64
	for _, r := range rs {
		if r.TTFTMs > 0 {
			xs = append(xs, r.TTFTMs)
		}
	}
	if len(xs) < 2 {
		return 1
	}
	med := stats.Describe(xs).P50
	b := make([]float64, len(xs))
	var sum, sum2 float64
	const reps = 200
	for range reps {
		for i := range b {
			b[i] = xs[rng.IntN(len(xs))]
		}
		slices.Sort(b)
		m := b[(len(b)-1)/2]
		sum += m
		sum2 += m * m
	}
	sd := math.Sqrt(max(sum2/reps-(sum/reps)*(sum/reps), 0))
	return max(sd/med, minSpread)
}

// Param is one fitted parameter of the profile.
type Param struct {
	Name  string  `json:"name"` // the profile's field, e.g. decode.table[16].step_ms
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
	// SE is the parameter's standard error from the figures' spread
	// (the covariance of the weighted least squares); Inf when the
	// figures do not move it.
	SE     float64 `json:"se"`
	Pinned bool    `json:"pinned"` // SE small enough to say
	From   string  `json:"from"`   // what in the data sets it
}

// vector is the fitted parameters in the order of the fitter's names: the
// step times (log ms), the prefill per token (log µs), the request
// overhead and the prefill fixed cost (ms, not negative).
type vector []float64

// fitter holds what a fit needs.
type fitter struct {
	base  *sim.Profile
	lv    []level
	xs    []int       // the step table's batch points: a level's batch × verify width
	sigma [][]float64 // per level, per figure
	chat  bool
	evals int
	// capPinned says the server's metrics showed its running cap.
	capPinned bool
}

func (f *fitter) nSteps() int { return len(f.xs) }

// profile is the base profile with the parameters v.
func (f *fitter) profile(v vector) *sim.Profile {
	p := *f.base
	p.Decode = sim.Decode{}
	n := f.nSteps()
	for i, x := range f.xs {
		p.Decode.Table = append(p.Decode.Table, sim.StepPoint{Batch: x, StepMs: math.Exp(v[i])})
	}
	p.Prefill = sim.Prefill{PerTokenUs: math.Exp(v[n]), FixedMs: max(v[n+2], 0)}
	p.RequestOverheadMs = max(v[n+1], 0)
	return &p
}

// replayed is the profile the replays run: without jitter, so the fit's
// objective is smooth in the parameters (the means it matches are not
// moved by a symmetric jitter).
func replayed(p *sim.Profile) *sim.Profile {
	q := *p
	q.Jitter = 0
	return &q
}

// stages replays every level with parameters v.
func (f *fitter) stages(v vector) []summary.Stage {
	p := replayed(f.profile(v))
	out := make([]summary.Stage, len(f.lv))
	for i := range f.lv {
		out[i] = replay(p, &f.lv[i], f.chat)
	}
	f.evals++
	return out
}

// residuals are the weighted log errors of every level's figures.
func (f *fitter) residuals(v vector) []float64 {
	st := f.stages(v)
	var r []float64
	for i := range f.lv {
		for k, fig := range figures {
			got, want := fig.of(&st[i]), fig.of(&f.lv[i].got)
			if !(want > 0) {
				r = append(r, 0)
				continue
			}
			e := 10.0 // a twin that measures nothing is far off
			if got > 0 {
				e = math.Log(got / want)
			}
			r = append(r, e/f.sigma[i][k])
		}
	}
	return r
}

func cost(r []float64) float64 {
	s := 0.0
	for _, x := range r {
		s += x * x
	}
	return s
}

// jacobian is the residuals' derivatives by forward differences.
func (f *fitter) jacobian(v vector, r0 []float64) [][]float64 {
	j := make([][]float64, len(r0))
	for i := range j {
		j[i] = make([]float64, len(v))
	}
	for k := range v {
		h := f.step(k, v[k])
		w := slices.Clone(v)
		w[k] += h
		r := f.residuals(w)
		for i := range r {
			j[i][k] = (r[i] - r0[i]) / h
		}
	}
	return j
}

// step is the finite-difference step of parameter k at value x: 2% for
// the log parameters, 2% or half a millisecond for the linear ones.
func (f *fitter) step(k int, x float64) float64 {
	if k <= f.nSteps() {
		return 0.02
	}
	return max(0.02*math.Abs(x), 0.5)
}

// clamp keeps the parameters in bounds: step times and the prefill per
// token between a nanosecond and a hundred seconds (in log), the linear
// ones not negative.
func (f *fitter) clamp(v vector) {
	n := f.nSteps()
	for k := range v {
		if k <= n {
			v[k] = min(max(v[k], math.Log(1e-6)), math.Log(1e5))
		} else {
			v[k] = max(v[k], 0)
		}
	}
}

// solve runs Levenberg–Marquardt from v and returns the best parameters,
// their residuals and the Jacobian there.
func (f *fitter) solve(v vector) (vector, []float64, [][]float64) {
	r := f.residuals(v)
	c := cost(r)
	mu := 1e-2
	var j [][]float64
	for iter := 0; iter < 40; iter++ {
		j = f.jacobian(v, r)
		a, g := normal(j, r)
		improved := false
		for try := 0; try < 8; try++ {
			m := make([][]float64, len(a))
			for i := range a {
				m[i] = slices.Clone(a[i])
				m[i][i] += mu * max(a[i][i], 1e-9)
			}
			neg := make([]float64, len(g))
			for i := range g {
				neg[i] = -g[i]
			}
			d, ok := gauss(m, neg)
			if !ok {
				mu *= 10
				continue
			}
			w := slices.Clone(v)
			for i := range w {
				w[i] += d[i]
			}
			f.clamp(w)
			rw := f.residuals(w)
			if cw := cost(rw); cw < c {
				gain := (c - cw) / max(c, 1e-12)
				v, r, c = w, rw, cw
				mu = max(mu/3, 1e-7)
				improved = true
				// Done when a step gains nothing, or little once every
				// residual is within its figure's spread on average.
				if gain < 1e-4 || (c <= float64(len(r)) && gain < 0.1) {
					return v, r, f.jacobian(v, r)
				}
				break
			}
			mu *= 4
		}
		if !improved {
			break
		}
	}
	return v, r, f.jacobian(v, r)
}

// covariance is the parameters' covariance (Jᵀ·J)⁻¹ with a tiny ridge,
// so a direction the figures do not move gets a huge variance rather
// than none.
func covariance(j [][]float64) [][]float64 {
	a, _ := normal(j, make([]float64, len(j)))
	top := 0.0
	for i := range a {
		top = max(top, a[i][i])
	}
	for i := range a {
		a[i][i] += max(top, 1) * 1e-10
	}
	inv, ok := inverse(a)
	if !ok {
		return nil
	}
	return inv
}

// levelSpreads is every level's figures' relative spread.
// levelSpreads is every level's figures' relative spread; fixed, when set,
// is every figure's.
func levelSpreads(lv []level, fixed float64) [][]float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([][]float64, len(lv))
	for i := range lv {
		for _, fig := range figures {
			s := fixed
			if !(s > 0) {
				s = fig.spread(lv[i].reqs, rng)
			}
			out[i] = append(out[i], s)
		}
	}
	return out
}
