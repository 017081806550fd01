package analyze

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

func timedRecord(id int) record.Record {
	r := record.New(id)
	r.Concurrency, r.Status, r.OutputTokens = 4, record.StatusOK, 600
	r.Sent = time.Duration(id) * time.Millisecond
	for k := range 600 {
		r.AddChunk(r.Sent+time.Duration(10+k)*time.Millisecond, 1)
	}
	r.Done = r.LastToken
	return r
}

// The timeline keeps the TimelineLimit requests with the smallest hashes,
// whatever order the records come in, and the arrivals of the
// ArrivalLimit smallest, thinned to ArrivalPoints and the last.
func TestTimelineSampleIsBoundedAndDeterministic(t *testing.T) {
	t.Parallel()
	const n = 5000
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	fold := func(order []int) *Timeline {
		f := NewFold(record.Setup{}, "")
		w := record.New(-1)
		w.Warmup, w.Status, w.Concurrency = true, record.StatusOK, 4
		f.Add(&w)
		for _, id := range order {
			r := timedRecord(id)
			f.Add(&r)
		}
		return f.Run().Stages[0].Timeline
	}
	a := fold(ids)
	shuffled := slices.Clone(ids)
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	b := fold(shuffled)
	if a.Requests != n || len(a.Sample) != TimelineLimit || !a.Sampled() || a.From != 0 || b.From != 0 {
		t.Fatalf("requests %d, sample %d, from %v and %v", a.Requests, len(a.Sample), a.From, b.From)
	}
	byHash := slices.Clone(ids)
	sort.Slice(byHash, func(i, j int) bool { return mix(uint64(byHash[i])) < mix(uint64(byHash[j])) })
	want := slices.Clone(byHash[:TimelineLimit])
	slices.Sort(want) // sent grows with the id
	var got, gotB []int
	withArrivals := 0
	for i := range a.Sample {
		got, gotB = append(got, a.Sample[i].ID), append(gotB, b.Sample[i].ID)
		if arr := a.Sample[i].Arrivals; arr != nil {
			withArrivals++
			if !slices.Contains(byHash[:ArrivalLimit], a.Sample[i].ID) {
				t.Errorf("request %d has arrivals but is not among the %d smallest hashes", a.Sample[i].ID, ArrivalLimit)
			}
			if len(arr) > ArrivalPoints+1 || arr[len(arr)-1].Tokens != 600 || arr[0].Tokens != 1 {
				t.Errorf("arrivals of %d: %d points, first %+v last %+v", a.Sample[i].ID, len(arr), arr[0], arr[len(arr)-1])
			}
		}
	}
	if !slices.Equal(got, want) || !slices.Equal(got, gotB) {
		t.Errorf("sample differs from the bottom-%d by hash or between orders", TimelineLimit)
	}
	if withArrivals != ArrivalLimit {
		t.Errorf("%d requests with arrivals, want %d", withArrivals, ArrivalLimit)
	}
}

// Server and GPU readings become series over the measured window: GPUs
// read at one instant are summed, a long series is thinned.
func TestSeriesOf(t *testing.T) {
	t.Parallel()
	f := NewFold(record.Setup{Server: record.Server{Engine: "sglang"}}, "")
	r := timedRecord(0)
	r.Sent = 0
	f.Add(&r)
	var ms []record.ServerSample
	var gs []record.GPUSample
	for i := range 3 * SeriesLimit {
		at := time.Duration(i) * 200 * time.Microsecond
		ms = append(ms, record.ServerSample{At: at, Values: map[string]float64{"sglang:num_running_reqs": float64(i % 5)}})
	}
	for i := range 3 {
		at := time.Duration(i) * 100 * time.Millisecond
		gs = append(gs, record.GPUSample{At: at, Index: 0, PowerW: 100, MemUsedMiB: 10, UtilPct: 20}, record.GPUSample{At: at, Index: 1, PowerW: 300, MemUsedMiB: 30, UtilPct: 60})
	}
	f.Metrics(ms)
	f.GPU(gs)
	s := f.Run().Stages[0].Series
	if s == nil || len(s.Server) > SeriesLimit+1 || len(s.Server) < SeriesLimit/2 {
		t.Fatalf("series %+v", s)
	}
	if len(s.GPU) != 3 || s.GPU[1].PowerW != 400 || s.GPU[1].MemMiB != 40 || s.GPU[1].UtilPct != 40 {
		t.Errorf("gpu series %+v", s.GPU)
	}
	for _, p := range s.Server {
		if p.At > r.Done {
			t.Errorf("a sample after the window: %v", p.At)
		}
	}
}

// BenchmarkTimelineAdd is what the timeline's sample costs a record (a
// hash and one comparison once the sample is full), against a Fold's whole
// Add of a 600-token request in BenchmarkFoldAdd.
func BenchmarkTimelineAdd(b *testing.B) {
	r := timedRecord(0)
	t := newTimelineAcc()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.ID = i
		t.add(&r)
	}
}

func BenchmarkFoldAdd(b *testing.B) {
	r := timedRecord(0)
	f := NewFold(record.Setup{}, "")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.ID = i
		f.Add(&r)
	}
}
