// Package summary turns one stage's Records into the figures of
// docs/METRICS.md §2–3, exactly as defined there. Warm-up records are
// excluded; latency figures use the requests that finished ok.
//
//	s := summary.Of(records, 32) // records of the C=32 stage
//	fmt.Println(s.AggregateTokS, s.TTFT.P99)
package summary

import (
	"math"
	"sort"
	"time"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
)

// Stage is one stage's figures. Times in distributions are milliseconds.
type Stage struct {
	Index       int     `json:"stage"`
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate,omitempty"`

	Requests  int                   `json:"requests"` // measured, any status
	OK        int                   `json:"ok"`
	Errors    map[record.Status]int `json:"errors,omitempty"` // by status, cancelled excluded
	Cancelled int                   `json:"cancelled,omitempty"`
	Retries   int                   `json:"retries,omitempty"`

	WallS        float64 `json:"wall_s"`
	OutputTokens int     `json:"output_tokens"`
	PromptTokens int     `json:"prompt_tokens"`
	CachedTokens int     `json:"cached_tokens"`

	AggregateTokS        float64 `json:"aggregate_tok_s"`
	SteadyTokS           float64 `json:"steady_tok_s"` // NaN when no time had the target in flight
	InputTokS            float64 `json:"input_tok_s"`
	TotalTokS            float64 `json:"total_tok_s"`
	RequestsPerS         float64 `json:"requests_per_s"`
	EffectiveConcurrency float64 `json:"effective_concurrency"`
	TokensPerChunk       float64 `json:"tokens_per_chunk"`
	// Goodput is the requests (and their tokens) per second that met every
	// objective of the SLO; with no SLO every ok request counts.
	GoodputRequestsPerS float64 `json:"goodput_requests_per_s"`
	GoodputTokS         float64 `json:"goodput_tok_s"`
	SLOMet              int     `json:"slo_met"`

	// NoContent counts ok requests with tokens but no visible content
	// (reasoning only): their TTFO is undefined.
	NoContent int `json:"no_content,omitempty"`
	// BufferedShare is the share of token chunks that were already waiting
	// in the client's buffer when read (a client falling behind).
	BufferedShare    float64 `json:"buffered_share"`
	MeanOutputTokens float64 `json:"mean_output_tokens"`

	ClientQueue stats.Dist `json:"client_queue_ms"`
	Late        int        `json:"late"` // open loop: sent more than 1 ms behind schedule
	TTFT        stats.Dist `json:"ttft_ms"`
	TTFO        stats.Dist `json:"ttfo_ms"`
	E2E         stats.Dist `json:"e2e_ms"`
	TPOT        stats.Dist `json:"tpot_ms"`
	DecodeTokS  stats.Dist `json:"decode_tok_s"`
	RequestTokS stats.Dist `json:"request_tok_s"`
	ITL         stats.Dist `json:"itl_ms"` // token-weighted
	ICL         stats.Dist `json:"icl_ms"`

	// What the server reported about the same requests, where it did.
	ServerTimed      int        `json:"server_timed,omitempty"`
	ServerDecodeTokS stats.Dist `json:"server_decode_tok_s"`
	ServerE2E        stats.Dist `json:"server_e2e_ms"`

	// Token sources over ok requests, for the warnings.
	OutputSources map[record.TokenSource]int `json:"output_sources"`
	ChunkSources  map[record.TokenSource]int `json:"chunk_sources"`
}

// LateThreshold is how far behind schedule an open-loop send counts as late.
const LateThreshold = time.Millisecond

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Of computes a stage's figures; target is its concurrency (0 for an
// uncapped open loop, which has no steady state to speak of).
func Of(recs []record.Record, target int) Stage { return OfSLO(recs, target, record.SLO{}) }

// OfSLO is Of with goodput measured against an SLO.
func OfSLO(recs []record.Record, target int, slo record.SLO) Stage {
	s := Stage{Concurrency: target, Errors: map[record.Status]int{}, OutputSources: map[record.TokenSource]int{}, ChunkSources: map[record.TokenSource]int{}}
	// Sized up front: a stage can hold a million requests.
	n, gaps := len(recs), 0
	for i := range recs {
		gaps += max(len(recs[i].Chunks)-1, 0)
	}
	queue, ttft, ttfo, e2e := make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	tpot, decode, reqTokS := make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	icl, itl := make([]float64, 0, gaps), make([]stats.Weighted, 0, gaps)
	var srvDecode, srvE2E []float64
	var first, last time.Duration = math.MaxInt64, math.MinInt64
	var busy time.Duration
	chunks, buffered := 0, 0
	for i := range recs {
		r := &recs[i]
		if r.Warmup {
			continue
		}
		s.Index, s.Rate = r.Stage, r.Rate
		s.Requests++
		s.Retries += r.Retries
		first, last = min(first, r.Sent), max(last, r.Done)
		busy += r.Done - r.Sent
		q := r.Sent - r.Scheduled
		queue = append(queue, ms(q))
		if r.Rate > 0 && q > LateThreshold {
			s.Late++
		}
		switch r.Status {
		case record.StatusOK:
		case record.StatusCancelled:
			s.Cancelled++
			continue
		default:
			s.Errors[r.Status]++
			continue
		}
		s.OK++
		goodTokens := 0
		if slo.Met(r) {
			s.SLOMet++
			goodTokens = r.OutputTokens
		}
		s.GoodputTokS += float64(goodTokens) // divided by the wall time below
		s.OutputTokens += r.OutputTokens
		s.PromptTokens += r.PromptTokens
		s.CachedTokens += r.CachedTokens
		s.OutputSources[r.OutputSource]++
		s.ChunkSources[r.ChunkSource]++
		chunks += len(r.Chunks)
		buffered += r.Buffered
		if t := r.Server; t != nil {
			s.ServerTimed++
			if v := t.DecodeTokS(); v > 0 {
				srvDecode = append(srvDecode, v)
			}
			if t.E2EMs > 0 {
				srvE2E = append(srvE2E, t.E2EMs)
			}
		}
		if len(r.Chunks) == 0 {
			continue
		}
		ttft = append(ttft, ms(r.FirstToken-r.Sent))
		if r.FirstContent != record.Unset {
			ttfo = append(ttfo, ms(r.FirstContent-r.Sent))
		} else {
			s.NoContent++
		}
		lat := r.LastToken - r.Sent
		e2e = append(e2e, ms(lat))
		if lat > 0 {
			reqTokS = append(reqTokS, float64(r.OutputTokens)/lat.Seconds())
		}
		if dt, dn := r.LastToken-r.FirstToken, r.OutputTokens-r.Chunks[0].Tokens; dn > 0 && dt > 0 {
			tpot = append(tpot, ms(dt)/float64(dn))
			decode = append(decode, float64(dn)/dt.Seconds())
		}
		for i := 1; i < len(r.Chunks); i++ {
			gap := r.Chunks[i].At - r.Chunks[i-1].At
			icl = append(icl, ms(gap))
			itl = append(itl, stats.Weighted{V: ms(gap) / float64(r.Chunks[i].Tokens), W: r.Chunks[i].Tokens})
		}
	}
	if len(s.Errors) == 0 {
		s.Errors = nil
	}
	if s.Requests > 0 {
		wall := last - first
		s.WallS = wall.Seconds()
		if wall > 0 {
			s.AggregateTokS = float64(s.OutputTokens) / s.WallS
			s.InputTokS = float64(s.PromptTokens) / s.WallS
			s.TotalTokS = float64(s.PromptTokens+s.OutputTokens) / s.WallS
			s.RequestsPerS = float64(s.OK) / s.WallS
			s.GoodputRequestsPerS = float64(s.SLOMet) / s.WallS
			s.GoodputTokS /= s.WallS
			s.EffectiveConcurrency = busy.Seconds() / s.WallS
		}
	}
	if s.OK > 0 {
		s.MeanOutputTokens = float64(s.OutputTokens) / float64(s.OK)
	}
	if chunks > 0 {
		s.TokensPerChunk = float64(s.OutputTokens) / float64(chunks)
		s.BufferedShare = float64(buffered) / float64(chunks)
	}
	s.SteadyTokS = steady(recs, target)
	s.ClientQueue = stats.Describe(queue)
	s.TTFT, s.TTFO, s.E2E = stats.Describe(ttft), stats.Describe(ttfo), stats.Describe(e2e)
	s.TPOT, s.DecodeTokS, s.RequestTokS = stats.Describe(tpot), stats.Describe(decode), stats.Describe(reqTokS)
	s.ITL, s.ICL = stats.DescribeWeighted(itl), stats.Describe(icl)
	s.ServerDecodeTokS, s.ServerE2E = stats.Describe(srvDecode), stats.Describe(srvE2E)
	return s
}

// steady is the tokens whose chunks arrived while at least target requests
// were in flight, divided by the time that was so (METRICS.md §3).
func steady(recs []record.Record, target int) float64 {
	if target <= 0 {
		return math.NaN()
	}
	type edge struct {
		at    time.Duration
		delta int
	}
	edges := make([]edge, 0, 2*len(recs))
	for i := range recs {
		if !recs[i].Warmup {
			edges = append(edges, edge{recs[i].Sent, +1}, edge{recs[i].Done, -1})
		}
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at != edges[j].at {
			return edges[i].at < edges[j].at
		}
		return edges[i].delta < edges[j].delta // a slot frees before it is refilled
	})
	type span struct{ from, to time.Duration }
	var spans []span
	n := 0
	var open time.Duration
	for _, e := range edges {
		was := n
		n += e.delta
		if was < target && n >= target {
			open = e.at
		} else if was >= target && n < target && e.at > open {
			spans = append(spans, span{open, e.at})
		}
	}
	var total time.Duration
	for _, sp := range spans {
		total += sp.to - sp.from
	}
	if total <= 0 {
		return math.NaN()
	}
	tokens := 0
	for i := range recs {
		r := &recs[i]
		if r.Status != record.StatusOK || r.Warmup {
			continue
		}
		for _, c := range r.Chunks {
			i := sort.Search(len(spans), func(i int) bool { return spans[i].to >= c.At })
			if i < len(spans) && spans[i].from <= c.At {
				tokens += c.Tokens
			}
		}
	}
	return float64(tokens) / total.Seconds()
}
