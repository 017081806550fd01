package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/check"
	"github.com/tokperf/tokperf/internal/memnet"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
	"github.com/tokperf/tokperf/internal/workload"
)

// virtual runs fn against the embedded simulator over an in-memory
// network in virtual time.
func virtual(t *testing.T, fn func(env *Env)) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		fn(&Env{Listen: func(string) (net.Listener, error) { return n, nil }, Dial: n.Dial})
	})
}

func tinySweep(dir string, levels ...int) SweepConfig {
	return SweepConfig{Command: "sweep", Target: Target{SimProfile: "tiny"}, Load: DefaultLoad(levels),
		Workload: workload.Synthetic{InputTokens: 16, OutputTokens: 32, IgnoreEOS: true, Seed: 1}, Out: filepath.Join(dir, "r.jsonl")}
}

// A sweep returns the model of what it measured, the same model its
// result file folds into.
func TestSweepModelEqualsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var live *analyze.Run
	virtual(t, func(env *Env) {
		var err error
		if live, err = Sweep(context.Background(), tinySweep(dir, 1, 4), env); err != nil {
			t.Fatal(err)
		}
	})
	if len(live.Stages) != 2 || live.Stages[0].Concurrency != 1 || live.Stages[1].Concurrency != 4 {
		t.Fatalf("stages %+v", live.Figures())
	}
	for _, s := range live.Stages {
		// The default size of measured requests of 32 tokens each, all ok.
		if want := DefaultRequests(s.Concurrency); s.OK != want || s.OutputTokens != 32*want {
			t.Errorf("C=%d: %d ok, %d tokens; want %d and %d", s.Concurrency, s.OK, s.OutputTokens, want, 32*want)
		}
	}
	if live.Verdict == nil || live.Integrity.Interrupted || !live.Integrity.Ended {
		t.Errorf("verdict %v, integrity %+v", live.Verdict, live.Integrity)
	}
	for _, s := range live.Stages {
		if s.Host != nil {
			t.Errorf("C=%d: a virtual run read the machine: %+v", s.Concurrency, *s.Host)
		}
	}
	saved, err := ReadRun(context.Background(), live.File, false)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(live, saved, cmpopts.IgnoreUnexported(analyze.Stage{}), cmpopts.EquateNaNs()); d != "" {
		t.Errorf("the live model and the file's differ (-live +file):\n%s", d)
	}
}

// --until-saturated doubles while aggregate grows 10% per doubling, then
// measures the level between the last two, and stops on failures or a
// missed SLO.
func TestNextLevel(t *testing.T) {
	t.Parallel()
	st := func(c int, agg float64) summary.Stage {
		return summary.Stage{Concurrency: c, Requests: 10, OK: 10, SLOMet: 10, AggregateTokS: agg, DecodeTokS: stats.Dist{Mean: 1}}
	}
	load := Load{MaxConcurrency: 64}
	for _, tc := range []struct {
		name   string
		levels []summary.Stage
		slo    record.SLO
		next   int
		last   bool
		cap    analyze.Cap
	}{
		{"rising: double", []summary.Stage{st(4, 100), st(8, 190)}, record.SLO{}, 16, false, analyze.Cap{}},
		{"flat: the level between", []summary.Stage{st(16, 100), st(32, 105)}, record.SLO{}, 23, true, analyze.Cap{}},
		{"the cap", []summary.Stage{st(32, 100), st(64, 190)}, record.SLO{}, 0, true, analyze.Cap{}},
		{"failures", []summary.Stage{st(4, 100), {Concurrency: 8, Requests: 10, OK: 9, AggregateTokS: 190}}, record.SLO{}, 0, true, analyze.Cap{}},
		{"SLO missed", []summary.Stage{st(4, 100), {Concurrency: 8, Requests: 10, OK: 10, SLOMet: 5, AggregateTokS: 190}}, record.SLO{TTFTMs: 100}, 0, true, analyze.Cap{}},
		// A server's running cap ends the search: the doubling stops at
		// it, a level past it runs the cap last, and at it nothing more.
		{"rising to a cap", []summary.Stage{st(1, 100), st(2, 190)}, record.SLO{}, 4, true, analyze.Cap{N: 4, From: "/props total_slots"}},
		{"past a cap", []summary.Stage{st(16, 100), st(32, 190)}, record.SLO{}, 24, true, analyze.Cap{N: 24, From: "metrics"}},
		{"at a cap", []summary.Stage{st(2, 100), st(4, 190)}, record.SLO{}, 0, true, analyze.Cap{N: 4, From: "/props total_slots"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, last, _ := nextLevel(tc.levels, load, tc.slo, tc.cap)
			if next != tc.next || last != tc.last {
				t.Errorf("next %d (last %v), want %d (%v)", next, last, tc.next, tc.last)
			}
		})
	}
}

// Overhead pairs the endpoints request by request: on a profile whose chat
// route adds a per-request cost, chat's TTFT is higher, significantly.
func TestOverheadLevels(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var res *analyze.Overhead
	virtual(t, func(env *Env) {
		var err error
		res, err = Overhead(context.Background(), OverheadConfig{Target: Target{SimProfile: "seed"}, Levels: []int{1},
			Workload: workload.Synthetic{InputTokens: 32, OutputTokens: 40, IgnoreEOS: true, Seed: 1}, Warmup: -1, Timeout: DefaultTimeout, Out: filepath.Join(dir, "o.jsonl")}, env)
		if err != nil {
			t.Fatal(err)
		}
	})
	if len(res.Levels) != 1 {
		t.Fatalf("%d levels", len(res.Levels))
	}
	l := res.Levels[0]
	if l.Raw.OK != 4 || l.Chat.OK != 4 || !l.TTFT.Significant() || l.TTFT.Value <= 0 || !strings.HasPrefix(l.Reading, "at C=1 chat adds") {
		t.Errorf("raw %d ok, chat %d ok, TTFT %v, reading %q", l.Raw.OK, l.Chat.OK, l.TTFT, l.Reading)
	}
}

// Check passes a correct server and says so as a number.
func TestCheckResult(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var res *check.Result
	virtual(t, func(env *Env) {
		var err error
		res, err = Check(context.Background(), CheckConfig{Target: Target{SimProfile: "tiny"}, Items: check.Items(1, 10), Concurrency: 2,
			MaxTokens: DefaultMaxTokens, MinAccuracy: 0.9, Seed: 1, Out: filepath.Join(dir, "c.jsonl")}, env)
		if err != nil {
			t.Fatal(err)
		}
	})
	if !res.Passed || res.Accuracy == nil || res.Accuracy.Right != 10 || res.Accuracy.Total != 10 || len(res.Sensible) != 4 {
		t.Errorf("%+v", res)
	}
}

// The debug server answers with the goroutine count while a job runs.
func TestDebugServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	addr, err := Debug(ctx, "127.0.0.1:0", &Env{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/debug/vars")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if !strings.HasPrefix(string(b), "goroutines ") {
		t.Errorf("/debug/vars: %q", b)
	}
}

// A server that counts tokens only in its final usage and puts several in
// a chunk (speculative decoding): at C=1 steady state and aggregate agree
// (no drain tail can exist there), and decode tok/s is the simulator's.
func TestEndOnlyUsageSteadyState(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "mtp.yaml")
	os.WriteFile(p, []byte(`name: mtp-end-usage
engine: vllm
model: m
decode: {linear: {a_ms: 5, c_ms: 0}}
prefill: {per_token_us: 10}
speculative: {method: EAGLE, drafts: 3, acceptance: 0.7}
wire: {usage_at_end: true}
`), 0o644)
	var run *analyze.Run
	virtual(t, func(env *Env) {
		cfg := tinySweep(dir, 1)
		cfg.Target.SimProfile, cfg.Workload.OutputTokens = p, 300
		var err error
		if run, err = Sweep(context.Background(), cfg, env); err != nil {
			t.Fatal(err)
		}
	})
	s := run.Stages[0]
	if s.TokensPerChunk < 1.5 || s.ChunkSources[record.SourceChunks] == 0 {
		t.Fatalf("%.2f tokens per chunk from %v: the profile should pack several, uncounted", s.TokensPerChunk, s.ChunkSources)
	}
	if d := s.SteadyTokS/s.AggregateTokS - 1; math.Abs(d) > 0.01 {
		t.Errorf("steady %.1f vs aggregate %.1f tok/s (%+.1f%%) at C=1", s.SteadyTokS, s.AggregateTokS, 100*d)
	}
	for _, w := range run.Warnings {
		if w.Check == "drain_tail" {
			t.Errorf("a drain tail at C=1: %s", w)
		}
	}
}

// The server's own timing set beside the client's compares like with
// like: llama.cpp's predicted_ms covers the tokens after the first, so its
// decode speed equals the client's within 1% at 8 and at 64 tokens; Ollama's
// eval_duration is compute only, so its total_duration is the like for
// like, equal to the client's E2E within 1%.
func TestServerTimingLikeForLike(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, engine := range []string{"llamacpp", "ollama"} {
		for _, tokens := range []int{8, 64} {
			t.Run(fmt.Sprintf("%s %d tokens", engine, tokens), func(t *testing.T) {
				p := filepath.Join(dir, engine+".yaml")
				os.WriteFile(p, []byte("name: "+engine+"\nengine: "+engine+"\nmodel: m\ndecode: {linear: {a_ms: 4, c_ms: 0.1}}\nprefill: {per_token_us: 20}\n"), 0o644)
				var run *analyze.Run
				out := t.TempDir() // a result file each: -o does not replace one
				virtual(t, func(env *Env) {
					cfg := tinySweep(out, 2)
					cfg.Target.SimProfile, cfg.Workload.OutputTokens = p, tokens
					var err error
					if run, err = Sweep(context.Background(), cfg, env); err != nil {
						t.Fatal(err)
					}
				})
				s := run.Stages[0]
				if s.ServerTimed != s.OK {
					t.Fatalf("%d of %d requests timed by the server", s.ServerTimed, s.OK)
				}
				if engine == "llamacpp" {
					if d := s.DecodeTokS.Mean/s.ServerDecodeTokS.Mean - 1; math.Abs(d) > 0.01 || s.ServerCompute != 0 {
						t.Errorf("decode: client %.1f, server %.1f tok/s (%+.2f%%)", s.DecodeTokS.Mean, s.ServerDecodeTokS.Mean, 100*d)
					}
					return
				}
				if d := s.E2E.Mean/s.ServerE2E.Mean - 1; math.Abs(d) > 0.01 || s.ServerCompute != s.OK {
					t.Errorf("E2E: client %.2f, server %.2f ms (%+.2f%%); %d of %d compute-only", s.E2E.Mean, s.ServerE2E.Mean, 100*d, s.ServerCompute, s.OK)
				}
			})
		}
	}
}

// A server that closes every connection after a stream (llama-server) is
// dialled afresh each time: no retries, and no warning blames the client.
// One that says so (Connection: close) is obeyed; one that closes without
// a word is learned from its first closes, then every request dials a new
// connection, counted in the run model and said in the report.
func TestServerThatClosesConnections(t *testing.T) {
	t.Parallel()
	for _, silent := range []bool{false, true} {
		t.Run(fmt.Sprint("silent=", silent), func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "closes.yaml")
			os.WriteFile(p, []byte(fmt.Sprintf("name: closes\nengine: llamacpp\nmodel: m\ndecode: {linear: {a_ms: 4, c_ms: 0.1}}\nprefill: {per_token_us: 20}\nwire: {close_after_stream: true, silent_close: %v}\n", silent)), 0o644)
			var run *analyze.Run
			virtual(t, func(env *Env) {
				cfg := tinySweep(dir, 4)
				cfg.Target.SimProfile, cfg.Load.Requests = p, 40
				var err error
				if run, err = Sweep(context.Background(), cfg, env); err != nil {
					t.Fatal(err)
				}
			})
			s := run.Stages[0]
			switch {
			case s.OK != 40:
				t.Errorf("%d of 40 ok", s.OK)
			case !silent && (s.Retries != 0 || s.NoKeepAlive != 0):
				t.Errorf("%d retries, %d learned fresh dials; want none against Connection: close", s.Retries, s.NoKeepAlive)
			case silent && (s.Retries > 4 || s.NoKeepAlive < 30):
				// The warm-up and the first requests find the closes out.
				t.Errorf("%d retries, %d requests dialled fresh: want the habit learned from the first few closes", s.Retries, s.NoKeepAlive)
			}
			for _, w := range run.Warnings {
				if w.Check == "client_lag" {
					t.Errorf("the client is blamed for the server's closing: %s", w)
				}
			}
		})
	}
}

// Ollama lists every model on disk: without --model the loaded one is
// measured, and with none loaded the run refuses to guess.
func TestOllamaLoadedModel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ps   string
		want string // model, or "" for a refusal
	}{
		{`{"models": [{"name": "qwen3:8b", "model": "qwen3:8b"}]}`, "qwen3:8b"},
		{`{"models": []}`, ""},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/api/version":
				w.Write([]byte(`{"version": "0.17.4"}`))
			case "/v1/models":
				w.Write([]byte(`{"data": [{"id": "llama3:70b"}, {"id": "qwen3:8b"}]}`))
			case "/api/ps":
				w.Write([]byte(tc.ps))
			default:
				http.NotFound(w, r)
			}
		}))
		s, err := Connect(t.Context(), "run", Target{URL: srv.URL}, &Env{})
		srv.Close()
		switch {
		case tc.want == "" && (err == nil || !strings.Contains(err.Error(), "has none loaded")):
			t.Errorf("%s: %v, want a refusal", tc.ps, err)
		case tc.want != "" && (err != nil || s.Setup.Model != tc.want):
			t.Errorf("%s: model %v (%v), want %s", tc.ps, s, err, tc.want)
		}
		if s != nil {
			s.Close()
		}
	}
}

// A server that writes three events per TCP write is not the client's
// lag: read as soon as they arrive (by the kernel's stamp), the events
// after the first of each write are server-coalesced, and no warning
// blames the client. Real time over loopback (the stamps are the kernel's);
// the best of three attempts, since a loaded machine can delay a read.
//
// Serial: real time: kernel arrival stamps over loopback.
func TestServerCoalescingIsNotClientLag(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("kernel arrival stamps are Linux's")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "coalesce.yaml")
	os.WriteFile(p, []byte("name: coalesce\nengine: vllm\nmodel: m\ndecode: {linear: {a_ms: 3, c_ms: 0}}\nprefill: {per_token_us: 10}\nwire: {events_per_write: 3}\n"), 0o644)
	var last string
	for attempt := range 3 {
		cfg := tinySweep(dir, 1)
		cfg.Target.SimProfile, cfg.Workload.OutputTokens, cfg.Load.Requests = p, 90, 4
		run, err := Sweep(context.Background(), cfg, &Env{})
		if err != nil {
			t.Fatal(err)
		}
		s := run.Stages[0]
		blamed := false
		for _, w := range run.Warnings {
			blamed = blamed || w.Check == "client_lag"
		}
		last = fmt.Sprintf("attempt %d: buffered %.2f, coalesced %.2f, blamed %v", attempt+1, s.BufferedShare, s.CoalescedShare, blamed)
		if s.CoalescedShare > 0.5 && s.BufferedShare < BufferedLimitForTest && !blamed {
			return
		}
		t.Log(last)
	}
	t.Errorf("%s: want two of three chunks coalesced by the server and the client not blamed", last)
}

// BufferedLimitForTest is the buffered share a loaded machine may still
// show here (a read delayed past a millisecond now and then).
const BufferedLimitForTest = 0.10

// The embedded simulator on a network of the caller's own (in memory, in
// virtual time) reports no kernel counters: the machine's would make two
// runs of the same virtual time differ with what else the machine does.
// Over real sockets it reports this machine's (the simulator's default).
func TestSimHostCounters(t *testing.T) {
	t.Parallel()
	virtual := &Env{Listen: func(string) (net.Listener, error) { return nil, nil }}
	if host := virtual.simHost(); host == nil {
		t.Error("a virtual network's simulator reads the machine's counters")
	} else if _, ok := host(); ok {
		t.Error("a virtual network's simulator reports kernel counters")
	}
	if (*Env)(nil).simHost() != nil || (&Env{}).simHost() != nil {
		t.Error("over real sockets the simulator does not read the machine's counters")
	}
}

// Over real sockets each stage records what the host did to the run: its
// threads' CPU time and wait, and the retransmits of the client's own
// connections (TCP_INFO, read as each request ends), in the model and
// the file alike; on a virtual network (TestSweepModelEqualsFile) none.
//
// Serial: real time over loopback; it reads this process's own CPU wait.
func TestStageHostReading(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc and TCP_INFO are Linux's")
	}
	dir := t.TempDir()
	cfg := tinySweep(dir, 1, 4)
	cfg.Load.Requests = 8
	live, err := Sweep(context.Background(), cfg, &Env{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range live.Stages {
		h := s.Host
		if h == nil {
			t.Fatalf("C=%d: no host reading", s.Concurrency)
		}
		if !h.Has("schedstat") || !h.Has("tcp_info") || h.CPURunS <= 0 || h.To <= h.From {
			t.Errorf("C=%d: host %+v, want this process's CPU time and its connections' TCP_INFO read", s.Concurrency, *h)
		}
	}
	saved, err := ReadRun(context.Background(), live.File, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range live.Stages {
		if d := cmp.Diff(live.Stages[i].Host, saved.Stages[i].Host); d != "" {
			t.Errorf("C=%d: the file's host reading differs (-live +file):\n%s", live.Stages[i].Concurrency, d)
		}
	}
}
