package runner_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/summary"
	"github.com/tokperf/tokperf/internal/workload"
)

// profile is the tiny profile with changes, written as YAML like a user's.
func profile(t *testing.T, extra string) *sim.Profile {
	t.Helper()
	y := `name: truth
model: truth
max_running: 4096
chunked_prefill: 1024
decode: {linear: {a_ms: 6, c_ms: 0.01}}
prefill: {fixed_ms: 0.5, per_token_us: 5}
` + extra
	p, err := sim.ParseProfile("truth.yaml", []byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type result struct {
	recs  []record.Record
	trace map[string]sim.TraceRequest
	clock record.Clock
	stage summary.Stage
}

// measure runs one closed-loop stage over real loopback HTTP against the
// simulator and returns the client's records with the server's truth.
func measure(t *testing.T, p *sim.Profile, endpoint string, c, n, out int, ignoreEOS bool) result {
	t.Helper()
	srv, url, stop, err := sim.Start(t.Context(), p, "127.0.0.1:0", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// "generate:tgi" is the native endpoint of an engine.
	endpoint, engine, _ := strings.Cut(endpoint, ":")
	if engine == "" {
		engine = p.Engine
	}
	b, err := backend.New(backend.Config{URL: url, Endpoint: endpoint, Engine: engine, Model: p.Model, Conns: c})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wl := workload.Synthetic{InputTokens: 64, OutputTokens: out, IgnoreEOS: ignoreEOS, Seed: 3}
	r := &runner.Runner{Backend: b, Source: wl.Request, Clock: record.NewClock()}
	recs := r.Stage(context.Background(), runner.Plan{Concurrency: c, Requests: n, Warmup: c, Timeout: time.Minute})
	// A handler files its trace just after its last write: wait for all.
	truth := map[string]sim.TraceRequest{}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, tr := range srv.Trace() {
			truth[tr.RequestID] = tr
		}
		if len(truth) >= n+c {
			break
		}
	}
	return result{recs, truth, r.Clock, summary.Of(recs, c)}
}

func (r result) truthOf(t *testing.T, rec record.Record) sim.TraceRequest {
	t.Helper()
	tr, ok := r.trace[fmt.Sprintf("tokperf-%d", rec.ID)]
	if !ok {
		t.Fatalf("request %d is not in the simulator's trace", rec.ID)
	}
	return tr
}

// Serial: real time: the client's timings against the simulator's, within its scheduling noise.
func TestMeasurementsMatchGroundTruth(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		c        int
	}{{"completions", 1}, {"completions", 16}, {"completions", 64}, {"chat", 16},
		{"generate:sglang", 16}, {"generate:tgi", 16}, {"generate:llamacpp", 16}, {"generate:ollama", 16}, {"api-chat:ollama", 16}} {
		t.Run(fmt.Sprintf("%s C=%d", tc.endpoint, tc.c), func(t *testing.T) {
			p := profile(t, "eos_probability: 0.01\n")
			// Timing is checked on the best of three attempts: the client and
			// the simulator share two cores with whatever else runs (go test
			// runs packages in parallel), and that load is not tokperf's error.
			// Counts are checked exactly on every attempt.
			var problems []string
			for attempt := range 3 {
				problems = truthProblems(t, measure(t, p, tc.endpoint, tc.c, 2*tc.c, 100, false))
				if len(problems) == 0 || raceEnabled {
					break
				}
				t.Logf("attempt %d: %v", attempt+1, problems)
			}
			if !raceEnabled {
				for _, p := range problems {
					t.Error(p)
				}
			}
		})
	}
}

// truthProblems compares one stage with the server's truth: token counts
// must be exact (a test failure at once), and the timing problems are returned.
func truthProblems(t *testing.T, res result) []string {
	t.Helper()
	var ttftGot, ttftTrue float64
	firstArrived, lastLeft := time.Time{}, time.Time{}
	trueTokens := 0
	for _, rec := range res.recs {
		if !rec.OK() {
			t.Fatalf("request %d: %s %s", rec.ID, rec.Status, rec.Error)
		}
		tr := res.truthOf(t, rec)
		if rec.OutputTokens != tr.OutputTokens || len(rec.Chunks) != len(tr.Chunks) {
			t.Fatalf("request %d: %d tokens in %d chunks, the server sent %d in %d", rec.ID, rec.OutputTokens, len(rec.Chunks), tr.OutputTokens, len(tr.Chunks))
		}
		for i := range rec.Chunks {
			if rec.Chunks[i].Tokens != tr.Chunks[i].Tokens {
				t.Fatalf("request %d chunk %d: %d tokens, the server sent %d", rec.ID, i, rec.Chunks[i].Tokens, tr.Chunks[i].Tokens)
			}
		}
		ttftGot += float64(rec.FirstToken-rec.Sent) / 1e6
		ttftTrue += float64(tr.Chunks[0].At.Sub(tr.Arrived)) / 1e6
		if firstArrived.IsZero() || tr.Arrived.Before(firstArrived) {
			firstArrived = tr.Arrived
		}
		if l := tr.Chunks[len(tr.Chunks)-1].At; l.After(lastLeft) {
			lastLeft = l
		}
		trueTokens += tr.OutputTokens
	}
	var problems []string
	n := float64(len(res.recs))
	// 2 ms, plus what this machine's scheduling adds right now (the p99 of
	// a timer's oversleep, twice: once for the client, once for the
	// simulator sharing its cores): a loaded machine delays both sides.
	noise := 2 * float64(timerLate()) / 1e6
	if d := math.Abs(ttftGot-ttftTrue) / n; d > 2+noise {
		problems = append(problems, fmt.Sprintf("mean TTFT %.2f ms, the server's %.2f ms: %.2f ms apart, want within 2 + %.2f (this machine's scheduling noise now)", ttftGot/n, ttftTrue/n, d, noise))
	}
	trueAgg := float64(trueTokens) / lastLeft.Sub(firstArrived).Seconds()
	if e := res.stage.AggregateTokS/trueAgg - 1; math.Abs(e) > 0.01 {
		problems = append(problems, fmt.Sprintf("aggregate %.1f tok/s, the server's %.1f: %+.2f%%, want within 1%%", res.stage.AggregateTokS, trueAgg, 100*e))
	}
	t.Logf("aggregate %.1f vs truth %.1f tok/s; mean TTFT %.2f vs %.2f ms", res.stage.AggregateTokS, trueAgg, ttftGot/n, ttftTrue/n)
	return problems
}

// Serial: real time: the client's gaps against the simulator's, within 5%.
func TestSeveralTokensPerChunk(t *testing.T) {
	for _, endpoint := range []string{"completions", "generate:sglang", "generate:llamacpp"} {
		t.Run(endpoint, func(t *testing.T) {
			p := profile(t, "stream_interval: 3\n")
			res := measure(t, p, endpoint, 4, 8, 150, true)
			s := res.stage
			trueTokens, trueChunks := 0, 0
			for _, rec := range res.recs {
				tr := res.truthOf(t, rec)
				trueTokens += tr.OutputTokens
				trueChunks += len(tr.Chunks)
			}
			if want := float64(trueTokens) / float64(trueChunks); math.Abs(s.TokensPerChunk-want) > 1e-9 || math.Abs(want-3) > 0.1 {
				t.Errorf("%.3f tokens per chunk, the server sent %.3f (about 3)", s.TokensPerChunk, want)
			}
			if r := s.ICL.P50 / s.ITL.P50; math.Abs(r-3) > 0.15 {
				t.Errorf("ICL p50 %.3f ms / ITL p50 %.3f ms = %.2f, want 3", s.ICL.P50, s.ITL.P50, r)
			}
			// Against the truth: the chunk-aware ITL is the server's gap per token.
			var gaps float64
			var tokens int
			for _, rec := range res.recs {
				tr := res.truthOf(t, rec)
				for i := 1; i < len(tr.Chunks); i++ {
					gaps += float64(tr.Chunks[i].At.Sub(tr.Chunks[i-1].At)) / 1e6
					tokens += tr.Chunks[i].Tokens
				}
			}
			if want := gaps / float64(tokens); math.Abs(s.ITL.Mean/want-1) > 0.05 {
				t.Errorf("mean ITL %.3f ms, the server's gaps give %.3f ms per token", s.ITL.Mean, want)
			}
		})
	}
}

func warningChecks(ws []analyze.Warning) string {
	var s []string
	for _, w := range ws {
		s = append(s, w.Check)
	}
	return strings.Join(s, ",")
}

func TestServerWithoutUsageIsFlagged(t *testing.T) {
	t.Parallel()
	res := measure(t, profile(t, "wire: {omit_usage: true}\n"), "completions", 4, 8, 50, true)
	ws := analyze.Warnings([]summary.Stage{res.stage}, analyze.Asked{OutputTokens: 50, IgnoreEOS: true})
	if !strings.Contains(warningChecks(ws), "token_source") {
		t.Errorf("no token_source warning for a server without usage; warnings: %v", ws)
	}
	if res.stage.OutputSources[record.SourceChunks] != 8 {
		t.Errorf("sources %v, want all 8 from chunks", res.stage.OutputSources)
	}
}

func TestShortOutputIsFlagged(t *testing.T) {
	t.Parallel()
	p := profile(t, "eos_probability: 0.05\nwire: {ignore_ignore_eos: true}\n")
	res := measure(t, p, "completions", 4, 8, 100, true)
	ws := analyze.Warnings([]summary.Stage{res.stage}, analyze.Asked{OutputTokens: 100, IgnoreEOS: true})
	if !strings.Contains(warningChecks(ws), "short_output") {
		t.Errorf("mean output %.0f of 100 asked and no short_output warning: %v", res.stage.MeanOutputTokens, ws)
	}
	// An honest server is not flagged.
	res = measure(t, profile(t, "eos_probability: 0.05\n"), "completions", 4, 8, 100, true)
	ws = analyze.Warnings([]summary.Stage{res.stage}, analyze.Asked{OutputTokens: 100, IgnoreEOS: true})
	if strings.Contains(warningChecks(ws), "short_output") || res.stage.MeanOutputTokens != 100 {
		t.Errorf("server honouring ignore_eos: mean %.0f, warnings %v", res.stage.MeanOutputTokens, ws)
	}
}

func TestFaultsBecomeStatuses(t *testing.T) {
	t.Parallel()
	// Timeouts with room for a loaded machine: only the stall (30 s) may
	// reach one, and it must, long before the stall ends.
	for _, tc := range []struct {
		fault   string
		want    record.Status
		timeout time.Duration
	}{
		{"http_500: 1", record.StatusHTTPError, 30 * time.Second},
		{"reset: 1", record.StatusStreamError, 30 * time.Second},
		{"malformed: 1", record.StatusStreamError, 30 * time.Second},
		{"truncate: 1", record.StatusIncomplete, 30 * time.Second},
		{"stall: 1, stall_s: 30", record.StatusTimeout, 2 * time.Second},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			p := profile(t, "faults: {\"*\": {"+tc.fault+"}}\n")
			_, url, stop, err := sim.Start(t.Context(), p, "127.0.0.1:0", sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			b, _ := backend.New(backend.Config{URL: url, Endpoint: "completions", Conns: 2})
			defer b.Close()
			wl := workload.Synthetic{InputTokens: 8, OutputTokens: 50, IgnoreEOS: true}
			r := &runner.Runner{Backend: b, Source: wl.Request, Clock: record.NewClock()}
			recs := r.Stage(context.Background(), runner.Plan{Concurrency: 2, Requests: 2, Timeout: tc.timeout})
			if len(recs) != 2 {
				t.Fatalf("%d records of 2 requests", len(recs))
			}
			for _, rec := range recs {
				if rec.Status != tc.want {
					t.Errorf("request %d: status %q (%s), want %q", rec.ID, rec.Status, rec.Error, tc.want)
				}
			}
		})
	}
}

// Over HTTP/2 cleartext the measurements match the truth as over HTTP/1.1.
func TestHTTP2(t *testing.T) {
	t.Parallel()
	p := profile(t, "eos_probability: 0.01\n")
	srv, url, stop, err := sim.Start(t.Context(), p, "127.0.0.1:0", sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	b, err := backend.New(backend.Config{URL: url, Endpoint: "completions", Model: p.Model, Conns: 16, HTTP2: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wl := workload.Synthetic{InputTokens: 16, OutputTokens: 50, IgnoreEOS: true}
	r := &runner.Runner{Backend: b, Source: wl.Request, Clock: record.NewClock()}
	recs := r.Stage(context.Background(), runner.Plan{Concurrency: 16, Requests: 32, Timeout: time.Minute})
	for deadline := time.Now().Add(5 * time.Second); len(srv.Trace()) < 32 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	truth := map[string]sim.TraceRequest{}
	for _, tr := range srv.Trace() {
		truth[tr.RequestID] = tr
	}
	for _, rec := range recs {
		tr, ok := truth[fmt.Sprintf("tokperf-%d", rec.ID)]
		if ok && tr.Proto != "HTTP/2.0" {
			t.Fatalf("request %d went over %q", rec.ID, tr.Proto)
		}
		if !rec.OK() || !ok || rec.OutputTokens != tr.OutputTokens || len(rec.Chunks) != len(tr.Chunks) {
			t.Errorf("request %d: %s %s, %d tokens in %d chunks, truth %d in %d", rec.ID, rec.Status, rec.Error, rec.OutputTokens, len(rec.Chunks), tr.OutputTokens, len(tr.Chunks))
		}
	}
}

// timerLate is the p99 of how late a 1 ms timer fires here now.
func timerLate() time.Duration {
	lates := make([]time.Duration, 50)
	for i := range lates {
		start := time.Now()
		time.Sleep(time.Millisecond)
		lates[i] = time.Since(start) - time.Millisecond
	}
	slices.Sort(lates)
	return lates[len(lates)*99/100]
}
