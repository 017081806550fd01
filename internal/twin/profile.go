package twin

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/sim"
)

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// known says which of the server's limits the run states or shows: the
// others are bracketed (Fit, Predict).
type known struct {
	cap, chunk bool
	kvHi       int // the KV pool's upper bound where the gauge estimated it
}

// unchunked is the prefill budget of a server that does not chunk prefill.
const unchunked = math.MaxInt32

// baseProfile is the profile's structure as the run shows it: identity,
// the limits the server states (record.StatedLimits) and, where it states
// none, the running cap and KV pool its metrics show, the stream's chunk
// shape (stream interval, speculative decoding), the step jitter and the
// EOS rate; the fit then sets the step times and prefill.
func baseProfile(in Input, lv []level) (*sim.Profile, known, []string) {
	s := in.Setup
	p := &sim.Profile{
		Name: "twin-" + strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(s.Model), "-"), "-"), Engine: "vllm",
		Model: s.Model, GPUs: max(s.GPUs, 1), GPU: s.GPU, MaxRunning: 256, KVTokens: 1 << 24,
		ChunkedPrefill: 8192, StreamInterval: 1, Seed: 1,
	}
	if p.Name == "twin-" {
		p.Name = "twin"
	}
	// The run's engine where the simulator imitates it (its wire format and
	// /metrics names), else vLLM's.
	if sim.Imitates(s.Server.Engine) {
		p.Engine = s.Server.Engine
	}
	var notes []string
	maxC, need := 0, 0
	for _, l := range lv {
		maxC = max(maxC, l.c)
		for _, j := range l.jobs {
			need = max(need, j.PromptTokens+j.MaxTokens)
		}
	}
	p.ContextLength = max(32768, need)
	p.MaxRunning = max(p.MaxRunning, maxC)
	k, stated := statedLimits(p, s.Server)
	notes = append(notes, stated...)
	if !k.cap {
		notes = append(notes, runningCap(p, lv)...)
		k.cap = p.MaxRunning < maxC
	}
	if lim := record.StatedLimits(s.Server); lim.KVTokens == 0 {
		hi, n := kvPool(p, lv)
		k.kvHi = hi
		notes = append(notes, n...)
	}
	notes = append(notes, chunkShape(p, lv)...)
	p.Jitter = jitter(lv[0])
	if !s.Workload.IgnoreEOS {
		stops, tokens := 0, 0
		for _, l := range lv {
			for _, r := range l.reqs {
				tokens += r.Output
				if r.Stopped {
					stops++
				}
			}
		}
		if tokens > 0 && stops > 0 {
			p.EOSProbability = min(float64(stops)/float64(tokens), 0.5)
		}
	}
	return p, k, notes
}

// statedLimits sets the limits the server stated about itself (SGLang's
// /server_info, llama.cpp's /props): a stated cap, chunk size or KV pool
// is the server's, not a guess.
func statedLimits(p *sim.Profile, srv record.Server) (known, []string) {
	lim := record.StatedLimits(srv)
	var k known
	var notes []string
	if lim.MaxRunning > 0 {
		p.MaxRunning, k.cap = lim.MaxRunning, true
		notes = append(notes, fmt.Sprintf("max_running %d: stated by the server", lim.MaxRunning))
	}
	switch {
	case lim.ChunkedPrefill < 0:
		p.ChunkedPrefill, k.chunk = unchunked, true
		notes = append(notes, "prefill is not chunked: stated by the server")
	case lim.ChunkedPrefill > 0:
		p.ChunkedPrefill, k.chunk = lim.ChunkedPrefill, true
		notes = append(notes, fmt.Sprintf("chunked_prefill %d: stated by the server", lim.ChunkedPrefill))
	}
	if lim.KVTokens > 0 {
		p.KVTokens = lim.KVTokens
		notes = append(notes, fmt.Sprintf("kv_tokens %d: stated by the server", lim.KVTokens))
	}
	return k, notes
}

// runningCap pins max_running where a level queued requests while fewer
// than its concurrency ran and the KV cache was not full.
func runningCap(p *sim.Profile, lv []level) []string {
	for _, l := range lv {
		r := l.srv
		if r == nil || r.Samples == 0 {
			continue
		}
		full := r.MaxKV != nil && *r.MaxKV >= 0.9
		if r.MaxWaiting > 0 && r.MaxRunning >= 1 && int(r.MaxRunning) < l.c && !full {
			p.MaxRunning = int(r.MaxRunning)
			return []string{fmt.Sprintf("max_running %d: at C=%d the server ran at most %d while requests waited", p.MaxRunning, l.c, p.MaxRunning)}
		}
	}
	return []string{fmt.Sprintf("max_running is not pinned down: no level queued requests below its concurrency (assumed %d, or each predicted level's C)", p.MaxRunning)}
}

// kvPool estimates kv_tokens from the KV gauge at the largest level that
// reports it: the tokens its requests hold (prompt and asked output, as
// the simulator reserves them) over the share in use; hi is the most the
// pool may be (0: not estimated).
func kvPool(p *sim.Profile, lv []level) (hi int, notes []string) {
	for i := len(lv) - 1; i >= 0; i-- {
		l := lv[i]
		if l.srv == nil || l.srv.MaxKV == nil || !(*l.srv.MaxKV > 0) || len(l.jobs) == 0 {
			continue
		}
		held, needs := 0, make([]int, len(l.jobs))
		for i, j := range l.jobs {
			needs[i] = j.PromptTokens + j.MaxTokens
			held += needs[i]
		}
		n := min(l.c, p.MaxRunning, len(needs))
		held = held / len(l.jobs) * n
		// The gauge's highest reading may have caught the largest
		// requests together: the pool is up to their KV over the share.
		slices.Sort(needs)
		most := 0
		for _, x := range needs[len(needs)-n:] {
			most += x
		}
		p.KVTokens = max(int(float64(held) / *l.srv.MaxKV), held)
		return max(int(float64(most) / *l.srv.MaxKV), p.KVTokens), []string{fmt.Sprintf("kv_tokens %d: from the KV gauge at C=%d (%.2g%% in use); predictions span up to %d, its largest requests held at once", p.KVTokens, l.c, 100**l.srv.MaxKV, int(float64(most) / *l.srv.MaxKV))}
	}
	return 0, []string{"kv_tokens is not pinned down: no KV gauge in the run (assumed ample)"}
}

// chunkShape reads the stream interval or speculative decoding from the
// chunks between each request's first and last: all of n tokens is a
// stream interval of n; varying counts are speculative steps, the most in
// one chunk being drafts + 1, the mean the tokens per step.
func chunkShape(p *sim.Profile, lv []level) []string {
	chunks, tokens, lo, hi := 0, 0, math.MaxInt, 0
	for _, l := range lv {
		for _, r := range l.reqs {
			if r.MidChunks == 0 {
				continue
			}
			chunks += r.MidChunks
			tokens += r.MidTokens
			lo, hi = min(lo, r.MidMin), max(hi, r.MidMax)
		}
	}
	switch {
	case chunks == 0:
		return []string{"stream_interval is not pinned down: no request had three chunks"}
	case lo == hi && hi > 1:
		p.StreamInterval = hi
		return []string{fmt.Sprintf("stream_interval %d: every chunk carried %d tokens", hi, hi)}
	case lo == hi:
		return nil
	}
	tau := float64(tokens) / float64(chunks)
	k := min(hi-1, 16)
	p.Spec = &sim.Spec{Method: "fitted", Drafts: k, Acceptance: acceptance(tau, k)}
	return []string{fmt.Sprintf("speculative decoding: %.2f tokens a step, at most %d in a chunk, so %d drafts accepted with probability %.3f each (draft_ms is folded into the step times)", tau, hi, k, p.Spec.Acceptance)}
}

// acceptance solves τ = (1 − α^(k+1)) / (1 − α) for α by bisection.
func acceptance(tau float64, k int) float64 {
	lo, hi := 0.0, 0.9999
	for range 60 {
		a := (lo + hi) / 2
		if (1-math.Pow(a, float64(k+1)))/(1-a) < tau {
			lo = a
		} else {
			hi = a
		}
	}
	return math.Round(lo*1e4) / 1e4
}

// jitter is the step's relative spread from the lowest level's ITL: its
// p90 over p50, as a normal spread (1.28 standard deviations).
func jitter(l level) float64 {
	d := l.got.ITL
	if !(d.P50 > 0) || !(d.P90 > d.P50) {
		return 0
	}
	return math.Round(min((d.P90-d.P50)/1.2816/d.P50, 0.3)*1e4) / 1e4
}

// profileYAML writes the fitted profile as a simulator profile file, the
// fit's levels and notes as comments.
func profileYAML(p *sim.Profile, m *analyze.Twin) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	w("# Fitted by tokperf fit to %s: the simulator's scheduler replayed the run's", m.File)
	w("# own requests and these parameters made its figures match (docs/METRICS.md §10).")
	for _, l := range m.Levels {
		var parts []string
		for _, f := range l.Figures {
			if !math.IsNaN(f.Error) {
				parts = append(parts, fmt.Sprintf("%s %.4g vs %.4g (%+.1f%%)", f.Name, f.Twin, f.Measured, 100*f.Error))
			}
		}
		w("#   C=%d: %s", l.Concurrency, strings.Join(parts, ", "))
	}
	for _, n := range m.Notes {
		w("# %s", n)
	}
	w("name: %s", p.Name)
	w("description: %q", "digital twin fitted to "+m.File)
	w("engine: %s", p.Engine)
	w("model: %q", p.Model)
	w("gpus: %d", p.GPUs)
	if p.GPU != "" {
		w("gpu: %q", p.GPU)
	}
	w("context_length: %d", p.ContextLength)
	w("max_running: %d", p.MaxRunning)
	w("kv_tokens: %d", p.KVTokens)
	w("chunked_prefill: %d", p.ChunkedPrefill)
	w("stream_interval: %d", p.StreamInterval)
	w("request_overhead_ms: %.4g", p.RequestOverheadMs)
	w("decode:")
	w("  table:")
	for _, pt := range p.Decode.Table {
		w("    - {batch: %d, step_ms: %.5g}", pt.Batch, pt.StepMs)
	}
	w("prefill:")
	w("  fixed_ms: %.4g", p.Prefill.FixedMs)
	w("  per_token_us: %.5g", p.Prefill.PerTokenUs)
	if s := p.Spec; s != nil {
		w("speculative: {method: %s, drafts: %d, acceptance: %.4g}", s.Method, s.Drafts, s.Acceptance)
	}
	w("eos_probability: %.6g", p.EOSProbability)
	w("jitter: %.4g", p.Jitter)
	w("seed: %d", p.Seed)
	return b.String()
}
