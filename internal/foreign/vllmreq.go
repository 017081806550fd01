package foreign

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
)

// vLLM's result file keeps one value per request beside its summaries:
// latencies (s) always, and with --save-detailed input_lens, output_lens,
// ttfts (s), itls (each request's chunk gaps, s) and errors ("" for a
// request that succeeded). They are lists over every request sent, failed
// ones included (their latency and TTFT are 0). Where they are present the
// stage's per-request figures are computed from them by tokperf's own
// definitions, and they are the samples compare tests.

// vllmArrays are the per-request lists a vLLM result holds; a nil list is
// one the file does not have.
type vllmArrays struct {
	latency, ttft []float64
	out           []float64
	itls          [][]float64
	errors        []string
}

// floats is field key as a list of numbers ≥ 0, nil when absent.
func (o obj) floats(key string) ([]float64, error) {
	raw, there := o.m[key]
	if !there || !present(raw) {
		return nil, nil
	}
	var xs []*float64
	if err := json.Unmarshal(raw, &xs); err != nil {
		return nil, o.errorf(key, "want a list of numbers, got %s", short(raw))
	}
	out := make([]float64, len(xs))
	for i, x := range xs {
		if x == nil {
			out[i] = math.NaN()
			continue
		}
		if *x < 0 || math.IsInf(*x, 0) {
			return nil, obj{d: o.d, path: o.at(key)}.errorf(strconv.Itoa(i), "want a finite value ≥ 0, got %g", *x)
		}
		out[i] = *x
	}
	return out, nil
}

func (o obj) vllmArrays() (vllmArrays, error) {
	var a vllmArrays
	var err error
	if a.latency, err = o.floats("latencies"); err != nil {
		return a, err
	}
	if a.ttft, err = o.floats("ttfts"); err != nil {
		return a, err
	}
	if a.out, err = o.floats("output_lens"); err != nil {
		return a, err
	}
	if raw, ok := o.m["itls"]; ok && present(raw) {
		if err := json.Unmarshal(raw, &a.itls); err != nil {
			return a, o.errorf("itls", "want a list of lists of gaps in seconds, got %s", short(raw))
		}
	}
	if raw, ok := o.m["errors"]; ok && present(raw) {
		var errs []*string
		if err := json.Unmarshal(raw, &errs); err != nil {
			return a, o.errorf("errors", "want a list of strings, got %s", short(raw))
		}
		a.errors = make([]string, len(errs))
		for i, e := range errs {
			if e != nil {
				a.errors[i] = *e
			}
		}
	}
	return a, nil
}

// vllmRequests fills the stage's per-request figures from the lists the
// result holds, returning the samples compare needs and the JSON names of
// the figures filled; nil samples when the file has no list.
func vllmRequests(o obj, s *summary.Stage, failedN int) (*analyze.Samples, []string, error) {
	a, err := o.vllmArrays()
	if err != nil {
		return nil, nil, err
	}
	if a.latency == nil && a.ttft == nil && a.out == nil && a.itls == nil {
		return nil, nil, nil
	}
	n := -1
	for _, f := range []struct {
		key string
		len int
		has bool
	}{{"latencies", len(a.latency), a.latency != nil}, {"ttfts", len(a.ttft), a.ttft != nil}, {"output_lens", len(a.out), a.out != nil},
		{"itls", len(a.itls), a.itls != nil}, {"errors", len(a.errors), a.errors != nil}} {
		if !f.has {
			continue
		}
		if n < 0 {
			n = f.len
		} else if f.len != n {
			return nil, nil, o.errorf(f.key, "has %d values where the other per-request lists have %d", f.len, n)
		}
	}
	if want := s.OK + max(failedN, 0); n != want {
		return nil, nil, o.errorf("latencies", "has %d values for %d requests (completed + failed)", n, want)
	}
	// ok tells a request that succeeded: its error is "" where the file
	// keeps errors; else, with failures, a latency > 0 (a failed request's
	// is 0).
	ok := func(i int) bool {
		switch {
		case a.errors != nil:
			return a.errors[i] == ""
		case failedN > 0 && a.latency != nil:
			return a.latency[i] > 0
		}
		return failedN <= 0
	}
	x := &analyze.Samples{}
	var e2e, ttft, tpot, dec, rtk, icl []float64
	for i := range n {
		if !ok(i) {
			continue
		}
		lat := math.NaN()
		if a.latency != nil {
			lat = a.latency[i]
			e2e = append(e2e, 1e3*lat)
		}
		if a.ttft != nil && !math.IsNaN(a.ttft[i]) {
			ttft = append(ttft, 1e3*a.ttft[i])
		}
		if a.out != nil && lat > 0 {
			rtk = append(rtk, a.out[i]/lat)
			x.Pairs = append(x.Pairs, [2]float64{a.out[i], lat})
		}
		if a.out != nil && a.ttft != nil && a.out[i] > 1 && lat > a.ttft[i] {
			d := lat - a.ttft[i]
			tpot = append(tpot, 1e3*d/(a.out[i]-1))
			dec = append(dec, (a.out[i]-1)/d)
		}
		if a.itls != nil {
			for _, g := range a.itls[i] {
				icl = append(icl, 1e3*g)
			}
		}
	}
	x.TTFT, x.Decode = ttft, dec
	var filled []string
	for _, f := range []struct {
		key string
		xs  []float64
		d   *stats.Dist
	}{{"e2e_ms", e2e, &s.E2E}, {"ttft_ms", ttft, &s.TTFT}, {"tpot_ms", tpot, &s.TPOT}, {"decode_tok_s", dec, &s.DecodeTokS},
		{"request_tok_s", rtk, &s.RequestTokS}, {"icl_ms", icl, &s.ICL}} {
		if len(f.xs) > 0 {
			*f.d = stats.Describe(f.xs)
			filled = append(filled, f.key)
		}
	}
	return x, filled, nil
}
