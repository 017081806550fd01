package analyze

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/summary"
)

// situation is a run folded from records built as a workload asked for
// them, with the server's /metrics scraped once a second over it.
type situation struct {
	setup    record.Setup
	recs     []record.Record
	counters func(at time.Duration, v map[string]float64) // the scrape at at; nil: none
}

// req is a finished request of stage 0 sent at sent: prompt tokens (cached
// of them), out output tokens in chunks of one, 10 ms apart.
func req(id, c int, sent time.Duration, prompt, cached, out int) record.Record {
	r := record.New(id)
	r.Concurrency, r.Scheduled, r.Sent, r.FirstByte = c, sent, sent, sent+5*time.Millisecond
	for k := range out {
		r.AddChunk(sent+time.Duration(5+10*k)*time.Millisecond, 1)
	}
	r.Done = r.LastToken + time.Millisecond
	r.Status, r.OutputTokens, r.OutputSource = record.StatusOK, out, record.SourceUsage
	r.PromptTokens, r.PromptSource, r.CachedTokens = prompt, record.SourceUsage, cached
	return r
}

func (s situation) run() *Run {
	f := NewFold(s.setup, "")
	var end time.Duration
	for i := range s.recs {
		f.Add(&s.recs[i])
		end = max(end, s.recs[i].Done)
	}
	if s.counters != nil {
		var samples []record.ServerSample
		for at := time.Duration(0); at <= end+time.Second; at += time.Second {
			v := map[string]float64{}
			s.counters(at, v)
			samples = append(samples, record.ServerSample{At: at, Values: v})
		}
		f.Metrics(samples)
	}
	return f.Run()
}

func checks(ws []Warning, check string) []Warning {
	var out []Warning
	for _, w := range ws {
		if w.Check == check {
			out = append(out, w)
		}
	}
	return out
}

// A dataset's requests ask for the file's output lengths, not the
// --output-tokens default: outputs exactly as the file asks are not short,
// and the header's 256 is not what was asked. A fixed length still is.
func TestDatasetOutputsAsAsked(t *testing.T) {
	t.Parallel()
	file := []int{20, 40, 8} // the dataset's max_tokens, honoured exactly
	for _, tc := range []struct {
		name   string
		output string // Setup.Workload.Output
		outs   func(i int) int
		want   bool
	}{
		{"a dataset's lengths", "dataset", func(i int) int { return file[i%3] }, false},
		{"a distribution's draws", "100-300", func(i int) int { return 100 + i%200 }, false},
		{"a fixed length cut short", "", func(i int) int { return 100 }, true},
		{"a fixed length honoured", "", func(i int) int { return 256 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setup := record.Setup{Workload: record.Workload{OutputTokens: 256, IgnoreEOS: true, Output: tc.output}}
			var recs []record.Record
			for i := range 12 {
				recs = append(recs, req(i, 1, time.Duration(i)*time.Second, 30, 0, tc.outs(i)))
			}
			got := checks(situation{setup: setup, recs: recs}.run().Warnings, "short_output")
			if (len(got) > 0) != tc.want {
				t.Errorf("short_output %v, want %v", got, tc.want)
			}
		})
	}
}

// vllmCache is vLLM's prefix-cache counters as a server that served
// hit/prompt of every prompt token from its cache (the rest of the
// counters flat), for requests of prompt tokens sent once a second.
func vllmCache(prompt int, hit float64) func(time.Duration, map[string]float64) {
	n := engine.MetricNames("vllm")
	return func(at time.Duration, v map[string]float64) {
		q := float64(prompt) * at.Seconds()
		v[n.CacheQueries], v[n.CacheHits], v[n.Running] = q, hit*q, 1
	}
}

// Prompts that share a prefix on purpose (--shared-prefix 256
// --prefix-groups 4) are served from the cache as asked: no "TTFT is
// flattered" from the usage counts or from the server's counters. Hits
// beyond the shared prefix still are, and so is any hit on prompts of
// their own.
func TestSharedPrefixHitsAsAsked(t *testing.T) {
	t.Parallel()
	const prompt, n = 512, 40
	for _, tc := range []struct {
		name          string
		shared, extra int // the shared prefix asked for; tokens cached beyond it
		want          bool
	}{
		{"the shared prefix asked for", 256, 0, false},
		{"beyond the shared prefix", 256, 200, true},
		{"prompts of their own", 0, 256, true},
		{"no hits", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setup := record.Setup{Server: record.Server{Engine: "vllm"}, Workload: record.Workload{InputTokens: prompt, OutputTokens: 4, SharedPrefix: tc.shared}}
			if tc.shared > 0 {
				setup.Workload.PrefixGroups = 4
			}
			var recs []record.Record
			cachedAll := 0
			for i := range n {
				cached := tc.shared + tc.extra
				if i < 4 {
					cached = tc.extra // each group's first prompt finds its prefix cold
				}
				cachedAll += cached
				recs = append(recs, req(i, 1, time.Duration(i)*time.Second, prompt, cached, 4))
			}
			run := situation{setup: setup, recs: recs, counters: vllmCache(prompt, float64(cachedAll)/float64(n*prompt))}.run()
			if run.Stages[0].Server == nil || run.Stages[0].Server.CacheHitRate == nil {
				t.Fatalf("no server reading of the cache: %+v", run.Stages[0].Server)
			}
			got := checks(run.Warnings, "prefix_cache")
			if (len(got) > 0) != tc.want {
				t.Errorf("hit rate %.2f: prefix_cache %v, want %v", *run.Stages[0].Server.CacheHitRate, got, tc.want)
			}
			for _, w := range got {
				if tc.shared > 0 && strings.Contains(w.Text, "meant to be uncached") {
					t.Errorf("a shared prefix asked for is called uncached: %s", w)
				}
			}
		})
	}
}

// An open loop's -c is a cap, not a target: a trace replayed at -c 256
// that never had 256 in flight was not capped by the server, and its
// effective concurrency is not 0% of anything. A closed
// loop is, when requests waited in the server's queue; with none waiting
// the server was not sent more than it ran.
func TestCappedOnlyWhenRequestsWaited(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		rate             float64
		running, waiting float64
		want             bool
	}{
		{"a trace under its cap", 0.5, 12, 0, false},
		{"an open loop at its cap with a queue", 0.5, 12, 30, false},
		{"a closed loop with a queue", 0, 12, 30, true},
		{"a closed loop with no queue", 0, 12, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var recs []record.Record
			for i := range 20 {
				r := req(i, 256, time.Duration(i)*time.Second, 30, 0, 4)
				r.Rate = tc.rate
				recs = append(recs, r)
			}
			n := engine.MetricNames("vllm")
			run := situation{setup: record.Setup{Server: record.Server{Engine: "vllm"}}, recs: recs, counters: func(_ time.Duration, v map[string]float64) {
				v[n.Running], v[n.Waiting] = tc.running, tc.waiting
			}}.run()
			got := checks(run.Warnings, "capped")
			if (len(got) > 0) != tc.want {
				t.Errorf("capped %v, want %v", got, tc.want)
			}
			// Under its cap an open loop's concurrency is its arrivals'.
			if w := checks(run.Warnings, "effective_concurrency"); tc.rate > 0 && len(w) > 0 {
				t.Errorf("an open loop judged against its cap: %v", w)
			}
			for _, w := range got {
				if strings.Contains(w.Text, "up to 0 waited") {
					t.Errorf("%s", w)
				}
			}
		})
	}
}

// A stage in which every request failed says so (errors) and nothing
// about its concurrency, which no finished request measured.
func TestAllFailedStageSaysOnlyErrors(t *testing.T) {
	t.Parallel()
	var recs []record.Record
	for i := range 40 {
		r := record.New(i)
		r.Concurrency, r.Scheduled, r.Sent, r.FirstByte, r.Done = 16, time.Duration(i)*time.Second, time.Duration(i)*time.Second, time.Duration(i)*time.Second+time.Millisecond, time.Duration(i)*time.Second+2*time.Millisecond
		r.Status, r.HTTPCode, r.Error, r.Backoff = record.StatusHTTPError, 500, "internal error", 200*time.Millisecond
		recs = append(recs, r)
	}
	run := situation{recs: recs}.run()
	if len(checks(run.Warnings, "errors")) != 1 {
		t.Errorf("no errors warning: %v", run.Warnings)
	}
	if w := checks(run.Warnings, "effective_concurrency"); len(w) > 0 {
		t.Errorf("an all-failed stage judged for concurrency: %v", w)
	}
}

// One late send on a quiet machine is not a late client; a few percent
// of them are. The warning names the threshold.
func TestLateSendsNeedAShare(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		late, total int
		want        bool
	}{
		{"one late send of 200", 1, 200, false},
		{"two of 200", 2, 200, false},
		{"three of 1000 (0.3%)", 3, 1000, false},
		{"ten of 200 (5%)", 10, 200, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var recs []record.Record
			for i := range tc.total {
				at := time.Duration(i) * 100 * time.Millisecond
				r := req(i, 0, at, 30, 0, 4)
				r.Rate = 10
				if i < tc.late {
					r.Sent += 5 * time.Millisecond // 5 ms behind schedule
				}
				recs = append(recs, r)
			}
			setup := record.Setup{Load: record.Load{TimerLateP99Ms: 0.2}}
			got := checks(situation{setup: setup, recs: recs}.run().Warnings, "client_lag")
			if (len(got) > 0) != tc.want {
				t.Errorf("client_lag %v, want %v", got, tc.want)
			}
			for _, w := range got {
				if !strings.Contains(w.Text, "more than 1.20 ms behind schedule") {
					t.Errorf("the threshold is not named: %s", w)
				}
			}
		})
	}
}

// A soak against a server that exposes no resident memory (llama-server)
// says memory was not read, instead of a verdict that reads as no leak.
func TestSoakWithoutMemorySaysSo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		scrapes   int
		resident  float64
		want, not string
	}{
		{"no memory metric", 5, 0, "server memory not read (the server's /metrics has no process_resident_memory_bytes): a leak would not show", "server memory flat"},
		{"no /metrics", 0, 0, "server memory not read (no /metrics from the server)", "server memory flat"},
		{"memory read", 5, 4e9, "server memory flat", "not read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var slices []record.Slice
			for i := range 20 {
				slices = append(slices, record.Slice{Index: i, From: time.Duration(i) * time.Minute, To: time.Duration(i+1) * time.Minute,
					Requests: 40, OK: 40, OutputTokens: 4000, AggregateTokS: 66.7 + float64(i%2), ServerSamples: tc.scrapes, ResidentBytes: tc.resident,
					TTFT: record.SliceDist{N: 40, P50: 100 + float64(i%3), P99: 120 + float64(i%3)}})
			}
			v := Stability(slices, time.Minute)
			if v.Kind != "stable" || !strings.Contains(v.Text, tc.want) || strings.Contains(v.Text, tc.not) {
				t.Errorf("%s\nwant %q, not %q", v.Text, tc.want, tc.not)
			}
		})
	}
}

// Agent sessions wait on tools between turns, so the moments with every
// slot in flight are not their steady state: no drain_tail warning for
// them (a generated shape or a replayed trace), while the same stage of
// plain requests keeps it.
func TestNoDrainTailForSessions(t *testing.T) {
	t.Parallel()
	st := summary.Stage{Concurrency: 2, Requests: 60, OK: 60, AggregateTokS: 568.8, SteadyTokS: 2047.6, EffectiveConcurrency: 0.6}
	has := func(ws []Warning) bool {
		return slices.ContainsFunc(ws, func(w Warning) bool { return w.Check == "drain_tail" })
	}
	if !has(Warnings([]summary.Stage{st}, Asked{})) {
		t.Fatal("plain requests far off their steady state: want drain_tail")
	}
	for _, w := range []record.Workload{{Agent: "bust", Conversations: true}, {Input: "agent trace", Conversations: true}, {ThinkS: 2, Conversations: true}} {
		r := &Run{Setup: record.Setup{Workload: w}, Stages: []Stage{{Stage: st}}}
		if ws := runWarnings(r); has(ws) {
			t.Errorf("%+v: a drain tail for sessions idle by design: %v", w, ws)
		}
	}
}
