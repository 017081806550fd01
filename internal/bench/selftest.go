package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/experiment"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/telemetry"
	"github.com/tokperf/tokperf/internal/workload"
)

// SelftestConfig is how the self-test ramps.
type SelftestConfig struct {
	Streams    []int   // concurrent streams per level
	StreamRate float64 // tokens per second each stream receives
	Tokens     int     // output tokens per request
	// MinChunks is how many chunks each reader reads per level at least
	// (streams run several requests in turn), so short levels are not noise.
	MinChunks  int
	Bare       bool   // also run the bare reference reader at each level
	CPUProfile string // write a CPU profile of tokperf's side here
	Out        string
}

// Selftest measures how far tokperf stays accurate: it runs the simulator
// in a separate process at a fixed per-stream token rate, ramps the number
// of streams, and compares what tokperf measured with the simulator's
// ground truth, and tokperf's CPU cost with a bare reader's.
func Selftest(ctx context.Context, cfg SelftestConfig, env *Env) (*analyze.Selftest, error) {
	for _, old := range staleSelftestDirs(os.TempDir()) {
		if os.RemoveAll(old.dir) == nil {
			fmt.Fprintf(env.progress(), "selftest: removed %s, left by an earlier selftest (pid %d) that was killed\n", old.dir, old.pid)
		}
	}
	// The pid in the name says whose it is, for the next one to tell.
	dir, err := os.MkdirTemp("", fmt.Sprintf("tokperf-selftest-%d-", os.Getpid()))
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	profile := filepath.Join(dir, "selftest.yaml")
	maxC := 1
	for _, c := range cfg.Streams {
		maxC = max(maxC, c)
	}
	// Flat steps: every stream gets the same token rate however many run.
	if err := writeSelftestProfile(profile, 1000/cfg.StreamRate, 0, maxC+1); err != nil {
		return nil, err
	}
	url, stop, simCPU, err := startSimProcess(ctx, "", profile)
	if err != nil {
		return nil, err
	}
	defer stop()
	progress := env.progress()
	fmt.Fprintf(progress, "selftest: the simulator runs in its own process at %s: %.4g tok/s per stream, %d tokens per request\n", url, cfg.StreamRate, cfg.Tokens)

	client := backend.NewClient(4, nil)
	defer client.CloseIdleConnections()
	probe, err := backend.New(backend.Config{URL: url, Endpoint: "completions", Model: "selftest"})
	if err != nil {
		return nil, err
	}
	setup := record.Setup{Command: "selftest", URL: url, Simulated: true, Profile: "selftest", Endpoint: "completions", Route: probe.Route(), Client: probe.Client(), Model: "selftest",
		Server: record.Server{Engine: "vllm"}, Workload: record.Workload{InputTokens: 8, OutputTokens: cfg.Tokens, IgnoreEOS: true}, Load: record.Load{Concurrency: cfg.Streams}}
	clock := record.NewClock()
	path, w, err := create(cfg.Out, "selftest", setup, clock, env.force())
	if err != nil {
		return nil, err
	}
	file := &sink{w: w, warn: progress}
	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	res := &analyze.Selftest{Schema: analyze.SelftestSchema, File: path, CPUs: runtime.NumCPU()}
	st := &selftest{cfg: cfg, url: url, client: client, clock: clock, file: file, simCPU: simCPU, progress: progress}
	for i, c := range cfg.Streams {
		if ctx.Err() != nil {
			break
		}
		l, err := st.level(ctx, i, c)
		if err != nil {
			return nil, err
		}
		res.Levels = append(res.Levels, l)
	}
	if err := file.close(ctx.Err() != nil); err != nil {
		return nil, err
	}
	res.Conclude()
	return res, nil
}

// selftest is what the self-test's levels share: the simulator's process
// and the result file.
type selftest struct {
	cfg      SelftestConfig
	url      string
	client   *http.Client // for the simulator's trace and /metrics
	clock    record.Clock
	file     *sink
	simCPU   func() time.Duration
	progress io.Writer
}

// level runs level i of c streams: a warm-up wave, then every stream its
// requests in turn, measured against the simulator's ground truth (and the
// bare reader's CPU, just before and just after, when asked).
func (st *selftest) level(ctx context.Context, i, c int) (analyze.SelftestLevel, error) {
	cfg, url, client := st.cfg, st.url, st.client
	fmt.Fprintf(st.progress, "%d streams ...\n", c)
	b, err := backend.New(backend.Config{URL: url, Endpoint: "completions", Model: "selftest", Conns: c})
	if err != nil {
		return analyze.SelftestLevel{}, err
	}
	clearTrace(ctx, client, url)
	wl := workload.Synthetic{InputTokens: 8, OutputTokens: cfg.Tokens, IgnoreEOS: true}
	r := &runner.Runner{Backend: b, Source: wl.Request, Clock: st.clock, Sink: st.file.write}
	// A warm-up wave opens the connections, as a normal run's does;
	// then every stream runs perStream requests in turn.
	perStream := max(1, (cfg.MinChunks+c*cfg.Tokens-1)/(c*cfg.Tokens))
	// The bare reader runs just before and just after tokperf, so a
	// drift in the machine's speed falls on both sides alike.
	var bareCPU [2]time.Duration
	var bareChunks [2]int
	if cfg.Bare {
		bareCPU[0], bareChunks[0], _ = bareRead(ctx, url, c, cfg.Tokens, perStream)
	}
	r.Each(ctx, runner.Plan{Index: i, Concurrency: c, Warmup: c, Timeout: 5 * time.Minute}, nil)
	debug.FreeOSMemory() // the peak below starts from what is in use
	peak := resetPeakRSS()
	lateBefore, _ := telemetry.Scrape(ctx, client, backend.Under(url, "/metrics"), engine.Metrics{})
	cpu0, sim0, wall0 := cpuTime(), st.simCPU(), time.Now()
	rt0, _ := b.Retransmits()
	recs := r.Stage(ctx, runner.Plan{Index: i, Concurrency: c, Requests: perStream * c, Timeout: 5 * time.Minute})
	l := analyze.SelftestLevel{Streams: c, OfferedTokS: float64(c) * cfg.StreamRate, CPU: cpuTime() - cpu0, RSSMB: rssMB(), Wall: time.Since(wall0)}
	if rt1, ok := b.Retransmits(); ok {
		l.OwnRetrans, l.OwnRead = rt1-rt0, true
	}
	if sim1 := st.simCPU(); sim0 > 0 && sim1 > sim0 {
		l.SimCPU = sim1 - sim0
	}
	if lateAfter, err := telemetry.Scrape(ctx, client, backend.Under(url, "/metrics"), engine.Metrics{}); err == nil && lateBefore != nil {
		l.SimSteps = lateAfter[engine.SimSteps] - lateBefore[engine.SimSteps]
		l.SimLateSteps = lateAfter[engine.SimLateSteps] - lateBefore[engine.SimLateSteps]
		l.HostDropped = lateAfter[engine.SimHostDropped] - lateBefore[engine.SimHostDropped]
		l.HostRetrans = lateAfter[engine.SimHostRetrans] - lateBefore[engine.SimHostRetrans]
	}
	if peak {
		l.RSSMB = peakRSSMB() // the most it held during the level, warm-up wave excluded
	}
	b.Close()
	l.Fill(recs)
	if truth, err := fetchTrace(ctx, client, url); err == nil {
		l.Compare(recs, truth, st.clock.Start())
	} else {
		fmt.Fprintf(st.progress, "  trace: %v\n", err)
	}
	if cfg.Bare && ctx.Err() == nil {
		bareCPU[1], bareChunks[1], _ = bareRead(ctx, url, c, cfg.Tokens, perStream)
		l.BareCPU, l.BareChunks = bareCPU[0]+bareCPU[1], bareChunks[0]+bareChunks[1]
	}
	fmt.Fprintf(st.progress, "  %.0f of %.0f tok/s received, %.1f µs CPU per chunk, %.0f MB, TTFT %+.1f%%, ITL p50 %+.1f%%, aggregate %+.1f%%, %d errors\n",
		l.ReceivedTokS, l.OfferedTokS, l.PerChunk(), l.RSSMB, 100*l.TTFTErr, 100*l.ITLErr, 100*l.AggErr, l.Errors)
	if l.BareChunks > 0 {
		fmt.Fprintf(st.progress, "  bare reader before and after: %.1f and %.1f µs per chunk\n",
			float64(bareCPU[0].Microseconds())/float64(max(bareChunks[0], 1)), float64(bareCPU[1].Microseconds())/float64(max(bareChunks[1], 1)))
	}
	return l, nil
}

// writeSelftestProfile writes the simulator profile of a self-test to
// path: each decode step takes aMs + cMs×batch milliseconds (cMs 0: every
// stream gets the same token rate however many run), prefill is all but
// free, and nothing but maxRunning bounds the batch.
func writeSelftestProfile(path string, aMs, cMs float64, maxRunning int) error {
	yaml := fmt.Sprintf("name: selftest\ndescription: %.4g ms steps + %.4g ms per stream\nengine: vllm\nmodel: selftest\nmax_running: %d\nkv_tokens: 1000000000\nchunked_prefill: 100000000\ncontext_length: 65536\ndecode: {linear: {a_ms: %.6g, c_ms: %.6g}}\nprefill: {per_token_us: 0.01}\n",
		aMs, cMs, maxRunning, aMs, cMs)
	return os.WriteFile(path, []byte(yaml), 0o644)
}

// startSimProcess runs `tokperf sim` from exe (empty: this same binary) in
// its own process group and returns its URL (its first line of output),
// how to stop it, and the CPU it has used so far (0 where that cannot be
// read: off Linux, or under go test, where `go run` starts it).
func startSimProcess(ctx context.Context, exe, profile string) (string, func(), func() time.Duration, error) {
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return "", nil, nil, err
		}
	}
	viaGo := testBinary(exe)
	cmd := exec.Command(exe, "sim", "--profile", profile, "--addr", "127.0.0.1:0", "--trace-limit", "1000000")
	if viaGo {
		// Under go test the binary is the test binary: run the real one.
		cmd = exec.Command("go", "run", "./cmd/tokperf", "sim", "--profile", profile, "--addr", "127.0.0.1:0", "--trace-limit", "1000000")
		cmd.Dir = moduleRoot()
	}
	experiment.OwnGroup(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", nil, nil, fmt.Errorf("starting the simulator: %w", err)
	}
	experiment.Track(cmd.Process)
	stop := func() {
		defer experiment.Untrack(cmd.Process)
		experiment.SignalGroup(cmd.Process, false)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			experiment.SignalGroup(cmd.Process, true)
			<-done
		}
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line, ok := <-lines:
		if !ok || !strings.HasPrefix(line, "http://") {
			stop()
			return "", nil, nil, fmt.Errorf("the simulator did not print its URL: %q %s", line, strings.TrimSpace(stderr.String()))
		}
		cpu := func() time.Duration { return 0 }
		if !viaGo {
			pid := cmd.Process.Pid
			cpu = func() time.Duration { return processCPU(pid) }
		}
		return line, stop, cpu, nil
	case <-time.After(2 * time.Minute):
		stop()
		return "", nil, nil, errors.New("the simulator did not start within 2 minutes")
	case <-ctx.Done():
		stop()
		return "", nil, nil, ctx.Err()
	}
}

// processCPU is the CPU, user and system, that process pid has used, from
// /proc/PID/stat (in clock ticks of 10 ms); 0 where it cannot be read.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name, field 2, is in parentheses and may hold spaces:
	// the fields counted are those after it (utime and stime: 14 and 15).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func testBinary(exe string) bool { return strings.HasSuffix(filepath.Base(exe), ".test") }

// moduleRoot finds the directory holding go.mod above the working directory.
func moduleRoot() string {
	dir, _ := os.Getwd()
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	return dir
}

// resetPeakRSS starts a new peak for peakRSSMB (Linux: clear_refs 5).
func resetPeakRSS() bool { return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil }

// peakRSSMB is the process's peak resident memory since resetPeakRSS.
func peakRSSMB() float64 { return procStatusMB("VmHWM:") }

// rssMB is the process's resident memory now, from /proc (0 elsewhere).
func rssMB() float64 { return procStatusMB("VmRSS:") }

func procStatusMB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, field) {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

func clearTrace(ctx context.Context, client *http.Client, url string) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, url+"/sim/trace", nil)
	if resp, err := client.Do(req); err == nil {
		resp.Body.Close()
	}
}

// fetchTrace is the simulator's ground truth, by the client's request ID.
func fetchTrace(ctx context.Context, client *http.Client, url string) (map[int]analyze.Truth, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/sim/trace", nil)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var t struct {
		Requests []sim.TraceRequest `json:"requests"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil {
		return nil, err
	}
	out := map[int]analyze.Truth{}
	for _, tr := range t.Requests {
		id, err := strconv.Atoi(strings.TrimPrefix(tr.RequestID, "tokperf-"))
		if err != nil {
			continue
		}
		truth := analyze.Truth{Arrived: tr.Arrived, OutputTokens: tr.OutputTokens}
		for _, c := range tr.Chunks {
			truth.Chunks = append(truth.Chunks, analyze.TruthChunk{At: c.At, Tokens: c.Tokens})
		}
		out[id] = truth
	}
	return out, nil
}

// bareRead is the reference reader: the same requests with net/http, a
// timestamp per data line, nothing parsed; a warm-up wave first, then
// perStream requests per stream. It returns the CPU time, the chunks and
// the bytes allocated of the measured requests.
func bareRead(ctx context.Context, url string, streams, tokens, perStream int) (time.Duration, int, uint64) {
	wave, done := bareReader(ctx, url, streams, tokens)
	defer done()
	wave(1)
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	cpu0 := cpuTime()
	chunks := wave(perStream)
	cpu := cpuTime() - cpu0
	runtime.ReadMemStats(&m1)
	return cpu, chunks, m1.TotalAlloc - m0.TotalAlloc
}

// bareReader is the reference reader's client for streams streams of
// tokens tokens: wave(n) runs n requests on every stream in turn and
// returns the chunks read; done closes its connections.
func bareReader(ctx context.Context, url string, streams, tokens int) (wave func(n int) int, done func()) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true, Proxy: nil}}
	body := fmt.Sprintf(`{"prompt":"a b c d e f g h","max_tokens":%d,"stream":true,"ignore_eos":true,"temperature":0}`, tokens)
	one := func() int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0
		}
		defer resp.Body.Close()
		stamps := make([]time.Time, 0, tokens+2)
		br := bufio.NewReaderSize(resp.Body, 4096)
		for {
			line, err := br.ReadSlice('\n')
			if bytes.HasPrefix(line, []byte("data: {")) {
				stamps = append(stamps, time.Now())
			}
			if err != nil {
				break
			}
		}
		return len(stamps)
	}
	wave = func(n int) int {
		var mu sync.Mutex
		chunks := 0
		var wg sync.WaitGroup
		for range streams {
			wg.Go(func() {
				got := 0
				for range n {
					got += one()
				}
				mu.Lock()
				chunks += got
				mu.Unlock()
			})
		}
		wg.Wait()
		return chunks
	}
	return wave, client.CloseIdleConnections
}

// staleDir is a selftest's folder whose process is gone.
type staleDir struct {
	dir string
	pid int
}

// staleSelftestDirs are the folders in tmp of selftests that were killed
// before they removed them: named tokperf-selftest-PID-…, PID no longer
// running. None where a process cannot be probed (Windows).
func staleSelftestDirs(tmp string) []staleDir {
	if runtime.GOOS == "windows" {
		return nil
	}
	dirs, _ := filepath.Glob(filepath.Join(tmp, "tokperf-selftest-*-*"))
	var out []staleDir
	for _, d := range dirs {
		f, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(d), "tokperf-selftest-"), "-")
		pid, err := strconv.Atoi(f)
		if err != nil || pid <= 0 {
			continue
		}
		p, err := os.FindProcess(pid)
		if err != nil {
			continue
		}
		// Another user's live process answers EPERM: not stale.
		if err := p.Signal(syscall.Signal(0)); err != nil && !errors.Is(err, os.ErrPermission) {
			out = append(out, staleDir{d, pid})
		}
	}
	return out
}
