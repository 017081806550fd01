package analyze

import (
	"sort"
	"time"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
)

// The bounds of what a Run keeps for its charts, whatever the file's size.
const (
	// TimelineLimit is how many of a stage's measured requests the
	// per-request timeline keeps.
	TimelineLimit = 1000
	// ArrivalLimit is how many of those keep their token arrivals.
	ArrivalLimit = 12
	// ArrivalPoints is the most arrivals kept of one request: a longer
	// stream keeps evenly spaced ones and its last.
	ArrivalPoints = 256
	// SeriesLimit is the most points a stage's server or GPU series keeps:
	// a longer one keeps every n-th reading.
	SeriesLimit = 1200
)

// Timeline is a sample of a stage's measured requests for the per-request
// timeline chart: at most TimelineLimit, chosen by a hash of the request
// id (the ones with the smallest hashes), so the same file always gives the
// same sample, whatever order its records come in, live or read back.
type Timeline struct {
	Requests int            `json:"requests"` // the measured requests it is drawn from
	From     time.Duration  `json:"from_ns"`  // the first of their sends, sampled or not
	Sample   []TimedRequest `json:"sample"`   // by send time
}

// Sampled says whether the timeline holds fewer requests than the stage.
func (t *Timeline) Sampled() bool { return len(t.Sample) < t.Requests }

// TimedRequest is one request of the timeline: when it was sent, got its
// first token and ended, on the run's clock.
type TimedRequest struct {
	ID         int           `json:"id"`
	Sent       time.Duration `json:"sent_ns"`
	FirstToken time.Duration `json:"first_token_ns"` // record.Unset: no token came
	Done       time.Duration `json:"done_ns"`
	OK         bool          `json:"ok"`
	Tokens     int           `json:"output_tokens"`
	// Arrivals are its token chunks' arrivals with the tokens received so
	// far, for the ArrivalLimit requests of the sample with the smallest
	// hashes (nil for the others).
	Arrivals []Arrival `json:"arrivals,omitempty"`
}

// Arrival is one chunk's arrival and the request's tokens so far.
type Arrival struct {
	At     time.Duration `json:"at_ns"`
	Tokens int           `json:"tokens"`
}

// Series are a stage's server /metrics and GPU readings over time, for the
// charts (at most SeriesLimit points each).
type Series struct {
	Server []ServerPoint `json:"server,omitempty"`
	GPU    []GPUPoint    `json:"gpu,omitempty"`
}

// ServerPoint is one scrape: requests running and waiting, the KV cache's
// used share (nil where the engine exposes none).
type ServerPoint struct {
	At      time.Duration `json:"at_ns"`
	Running float64       `json:"running"`
	Waiting float64       `json:"waiting"`
	KV      *float64      `json:"kv_share,omitempty"`
}

// GPUPoint is one reading of all GPUs: total power and memory, mean
// utilization.
type GPUPoint struct {
	At      time.Duration `json:"at_ns"`
	PowerW  float64       `json:"power_w"`
	MemMiB  float64       `json:"mem_used_mib"`
	UtilPct float64       `json:"util_pct"`
}

// sampler keeps the k items with the smallest keys (a bottom-k sample):
// a max-heap on the key.
type sampler struct {
	k     int
	keys  []uint64
	items []TimedRequest
}

func (s *sampler) add(key uint64, item func() TimedRequest) {
	if len(s.keys) < s.k {
		s.keys, s.items = append(s.keys, key), append(s.items, item())
		for i := len(s.keys) - 1; i > 0; {
			p := (i - 1) / 2
			if s.keys[p] >= s.keys[i] {
				break
			}
			s.swap(i, p)
			i = p
		}
		return
	}
	if s.k == 0 || key >= s.keys[0] {
		return
	}
	s.keys[0], s.items[0] = key, item()
	for i := 0; ; {
		l, r, big := 2*i+1, 2*i+2, i
		if l < len(s.keys) && s.keys[l] > s.keys[big] {
			big = l
		}
		if r < len(s.keys) && s.keys[r] > s.keys[big] {
			big = r
		}
		if big == i {
			return
		}
		s.swap(i, big)
		i = big
	}
}

func (s *sampler) swap(i, j int) {
	s.keys[i], s.keys[j] = s.keys[j], s.keys[i]
	s.items[i], s.items[j] = s.items[j], s.items[i]
}

// mix is splitmix64's finalizer: a well-spread hash of a request id.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// timelineAcc builds a stage's Timeline from its measured records.
type timelineAcc struct {
	n        int
	from     time.Duration
	requests sampler
	arrivals sampler
}

func newTimelineAcc() *timelineAcc {
	return &timelineAcc{requests: sampler{k: TimelineLimit}, arrivals: sampler{k: ArrivalLimit}}
}

func (t *timelineAcc) add(r *record.Record) {
	if t.n == 0 || r.Sent < t.from {
		t.from = r.Sent
	}
	t.n++
	key := mix(uint64(r.ID))
	timed := func() TimedRequest {
		return TimedRequest{ID: r.ID, Sent: r.Sent, FirstToken: r.FirstToken, Done: r.Done, OK: r.OK(), Tokens: r.OutputTokens}
	}
	t.requests.add(key, timed)
	if r.OK() && len(r.Chunks) > 0 {
		t.arrivals.add(key, func() TimedRequest { tr := timed(); tr.Arrivals = arrivalsOf(r.Chunks); return tr })
	}
}

// arrivalsOf are a request's chunk arrivals with the tokens so far, at
// most ArrivalPoints of them, the last always among them.
func arrivalsOf(chunks []record.Chunk) []Arrival {
	stride := (len(chunks) + ArrivalPoints - 1) / ArrivalPoints
	out := make([]Arrival, 0, min(len(chunks), ArrivalPoints+1))
	sum := 0
	for i, c := range chunks {
		sum += c.Tokens
		if i%stride == 0 || i == len(chunks)-1 {
			out = append(out, Arrival{At: c.At, Tokens: sum})
		}
	}
	return out
}

func (t *timelineAcc) timeline() *Timeline {
	if t.n == 0 {
		return nil
	}
	tl := &Timeline{Requests: t.n, From: t.from, Sample: append([]TimedRequest(nil), t.requests.items...)}
	with := map[int][]Arrival{}
	for _, a := range t.arrivals.items {
		with[a.ID] = a.Arrivals
	}
	for i := range tl.Sample {
		tl.Sample[i].Arrivals = with[tl.Sample[i].ID]
	}
	sort.Slice(tl.Sample, func(i, j int) bool {
		a, b := tl.Sample[i], tl.Sample[j]
		if a.Sent != b.Sent {
			return a.Sent < b.Sent
		}
		return a.ID < b.ID
	})
	return tl
}

// SeriesOf are a stage's server and GPU readings over its measured
// window, thinned to SeriesLimit points; nil when there are none.
func SeriesOf(got Received, metrics []record.ServerSample, gpus []record.GPUSample, names engine.Metrics) *Series {
	from, to := got.Window()
	var s Series
	for _, m := range metrics {
		if m.At < from || m.At > to {
			continue
		}
		p := ServerPoint{At: m.At, Running: m.Values[names.Running], Waiting: m.Values[names.Waiting]}
		if v, ok := m.Values[names.KV]; ok && names.KV != "" {
			p.KV = &v
		}
		s.Server = append(s.Server, p)
	}
	sort.SliceStable(s.Server, func(i, j int) bool { return s.Server[i].At < s.Server[j].At })
	by := map[time.Duration]*GPUPoint{}
	count := map[time.Duration]int{}
	for _, g := range gpus {
		if g.At < from || g.At > to {
			continue
		}
		p := by[g.At]
		if p == nil {
			p = &GPUPoint{At: g.At}
			by[g.At] = p
		}
		p.PowerW += g.PowerW
		p.MemMiB += g.MemUsedMiB
		p.UtilPct += g.UtilPct
		count[g.At]++
	}
	for at, p := range by {
		p.UtilPct /= float64(count[at])
		s.GPU = append(s.GPU, *p)
	}
	sort.Slice(s.GPU, func(i, j int) bool { return s.GPU[i].At < s.GPU[j].At })
	s.Server, s.GPU = thin(s.Server), thin(s.GPU)
	if len(s.Server) == 0 && len(s.GPU) == 0 {
		return nil
	}
	return &s
}

// thin keeps every n-th point and the last, so at most SeriesLimit+1 remain.
func thin[T any](ps []T) []T {
	if len(ps) <= SeriesLimit {
		return ps
	}
	stride := (len(ps) + SeriesLimit - 1) / SeriesLimit
	var out []T
	for i, p := range ps {
		if i%stride == 0 || i == len(ps)-1 {
			out = append(out, p)
		}
	}
	return out
}
