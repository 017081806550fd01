package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
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
	"time"

	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/experiment"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/runner"
	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/stats"
	"github.com/tokperf/tokperf/internal/summary"
	"github.com/tokperf/tokperf/internal/workload"
)

// selftestCmd is tokperf selftest: how far tokperf stays accurate. It runs
// the simulator in a separate process at a fixed per-stream token rate,
// ramps the number of streams, and compares what tokperf measured with the
// simulator's ground truth, and tokperf's CPU cost with a bare reader's.
func selftestCmd(ctx context.Context, args []string, e *env) error {
	fs := flag.NewFlagSet("selftest", flag.ContinueOnError)
	var levels ints
	levels.Set("32,256,1024,4096,10000")
	fs.Var(&levels, "streams", "concurrent streams per level")
	rate := fs.Float64("stream-rate", 25, "tokens per second each stream receives")
	tokens := fs.Int("tokens", 50, "output tokens per request")
	out := fs.String("out", "", "result file (default ./tokperf-results/TIMESTAMP-selftest.jsonl)")
	fs.StringVar(out, "o", "", "shorthand for --out")
	minChunks := fs.Int("min-chunks", 20000, "chunks each reader reads per level at least (streams run several requests in turn), so short levels are not noise")
	bare := fs.Bool("bare", true, "also run the bare reference reader at each level")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of tokperf's side to this file")
	if err := parse(fs, args, e); err != nil {
		return err
	}
	if !(*rate > 0) || *tokens < 2 {
		return usagef("--stream-rate must be positive and --tokens at least 2")
	}
	dir, err := os.MkdirTemp("", "tokperf-selftest")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	profile := filepath.Join(dir, "selftest.yaml")
	maxC := 1
	for _, c := range levels {
		maxC = max(maxC, c)
	}
	// Flat steps: every stream gets the same token rate however many run.
	yaml := fmt.Sprintf("name: selftest\ndescription: flat %.4g ms steps\nengine: vllm\nmodel: selftest\nmax_running: %d\nkv_tokens: 1000000000\nchunked_prefill: 100000000\ncontext_length: 65536\ndecode: {linear: {a_ms: %.6g, c_ms: 0}}\nprefill: {per_token_us: 0.01}\n",
		1000 / *rate, maxC+1, 1000 / *rate)
	if err := os.WriteFile(profile, []byte(yaml), 0o644); err != nil {
		return err
	}
	url, stop, err := startSimProcess(ctx, profile)
	if err != nil {
		return err
	}
	defer stop()
	fmt.Fprintf(e.stderr, "selftest: the simulator runs in its own process at %s: %.4g tok/s per stream, %d tokens per request\n", url, *rate, *tokens)

	client := backend.NewClient(4, nil)
	probe, err := backend.New(backend.Config{URL: url, Endpoint: "completions", Model: "selftest"})
	if err != nil {
		return err
	}
	setup := record.Setup{Command: "selftest", URL: url, Simulated: true, Profile: "selftest", Endpoint: "completions", Route: probe.Route(), Client: probe.Client(), Model: "selftest",
		Server: record.Server{Engine: "vllm"}, Workload: record.Workload{InputTokens: 8, OutputTokens: *tokens, IgnoreEOS: true}, Load: record.Load{Concurrency: levels}}
	path, w, clock, err := create(*out, "selftest", setup)
	if err != nil {
		return err
	}
	wl := workload.Synthetic{InputTokens: 8, OutputTokens: *tokens, IgnoreEOS: true}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	var rows []selftestRow
	for i, c := range levels {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(e.stderr, "%d streams ...\n", c)
		b, err := backend.New(backend.Config{URL: url, Endpoint: "completions", Model: "selftest", Conns: c})
		if err != nil {
			return err
		}
		clearTrace(ctx, client, url)
		r := &runner.Runner{Backend: b, Source: wl.Request, Clock: clock, Sink: func(rec record.Record) { w.Write(rec) }}
		// A warm-up wave opens the connections, as a normal run's does;
		// then every stream runs perStream requests in turn.
		perStream := max(1, (*minChunks+c**tokens-1)/(c**tokens))
		// The bare reader runs just before and just after tokperf, so a
		// drift in the machine's speed falls on both sides alike.
		var bareCPU [2]time.Duration
		var bareChunks [2]int
		if *bare {
			bareCPU[0], bareChunks[0] = bareRead(ctx, url, c, *tokens, perStream)
		}
		r.Each(ctx, runner.Stage{Index: i, Concurrency: c, Warmup: c, Timeout: 5 * time.Minute}, nil)
		debug.FreeOSMemory() // the peak below starts from what is in use
		peak := resetPeakRSS()
		cpu0 := cpuTime()
		recs := r.Stage(ctx, runner.Stage{Index: i, Concurrency: c, Requests: perStream * c, Timeout: 5 * time.Minute})
		row := selftestRow{Streams: c, Offered: float64(c) * *rate, CPU: cpuTime() - cpu0, RSSMB: rssMB()}
		if peak {
			row.RSSMB = peakRSSMB() // the most it held during the level, warm-up wave excluded
		}
		b.Close()
		row.fill(recs, c)
		if truth, err := fetchTrace(ctx, client, url); err == nil {
			row.compare(recs, truth, clock)
		} else {
			fmt.Fprintf(e.stderr, "  trace: %v\n", err)
		}
		if *bare && ctx.Err() == nil {
			bareCPU[1], bareChunks[1] = bareRead(ctx, url, c, *tokens, perStream)
			row.BareCPU, row.BareChunks = bareCPU[0]+bareCPU[1], bareChunks[0]+bareChunks[1]
		}
		rows = append(rows, row)
		fmt.Fprintf(e.stderr, "  %s\n", row.short())
		if row.BareChunks > 0 {
			fmt.Fprintf(e.stderr, "  bare reader before and after: %.1f and %.1f µs per chunk\n",
				float64(bareCPU[0].Microseconds())/float64(max(bareChunks[0], 1)), float64(bareCPU[1].Microseconds())/float64(max(bareChunks[1], 1)))
		}
	}
	w.Close(ctx.Err() != nil)
	client.CloseIdleConnections()
	printSelftest(e.stdout, rows)
	fmt.Fprintf(e.stdout, "results: %s\n", path)
	if ctx.Err() != nil {
		return errInterrupted
	}
	return nil
}

// startSimProcess runs `tokperf sim` from this same binary in its own
// process group and returns its URL (its first line of output).
func startSimProcess(ctx context.Context, profile string) (string, func(), error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(exe, "sim", "--profile", profile, "--addr", "127.0.0.1:0")
	if testBinary(exe) {
		// Under go test the binary is the test binary: run the real one.
		cmd = exec.Command("go", "run", "./cmd/tokperf", "sim", "--profile", profile, "--addr", "127.0.0.1:0")
		cmd.Dir = moduleRoot()
	}
	experiment.OwnGroup(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("starting the simulator: %w", err)
	}
	stop := func() {
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
			return "", nil, fmt.Errorf("the simulator did not print its URL: %q %s", line, strings.TrimSpace(stderr.String()))
		}
		return line, stop, nil
	case <-time.After(2 * time.Minute):
		stop()
		return "", nil, errors.New("the simulator did not start within 2 minutes")
	case <-ctx.Done():
		stop()
		return "", nil, ctx.Err()
	}
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

func fetchTrace(ctx context.Context, client *http.Client, url string) ([]sim.TraceRequest, error) {
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
	return t.Requests, nil
}

type selftestRow struct {
	Streams           int
	Offered, Received float64 // tok/s
	CPU               time.Duration
	Tokens, Chunks    int
	RSSMB             float64
	Errors            int
	TTFTErr, ITLErr   float64 // relative error against the truth
	AggErr            float64
	BufferedShare     float64
	BareCPU           time.Duration
	BareChunks        int
	compared          bool
}

func (r *selftestRow) fill(recs []record.Record, c int) {
	s := summary.Of(recs, c)
	r.Received, r.Tokens, r.Errors, r.BufferedShare = s.AggregateTokS, s.OutputTokens, s.Requests-s.OK, s.BufferedShare
	for _, rec := range recs {
		r.Chunks += len(rec.Chunks)
	}
}

// compare sets the client's TTFT, median ITL and aggregate against the
// simulator's trace of the same requests.
func (r *selftestRow) compare(recs []record.Record, truth []sim.TraceRequest, clock record.Clock) {
	byID := map[string]sim.TraceRequest{}
	for _, t := range truth {
		byID[t.RequestID] = t
	}
	var ttftGot, ttftTrue float64
	var itlGot, itlTrue []stats.Weighted
	var first, last time.Time
	tokens, n := 0, 0
	for _, rec := range recs {
		t, ok := byID["tokperf-"+strconv.Itoa(rec.ID)]
		if !ok || !rec.OK() || len(t.Chunks) == 0 || len(rec.Chunks) == 0 {
			continue
		}
		n++
		// The truth is when the first token left the server, on the
		// wall clock both processes share; the difference is the time
		// tokperf took to notice it.
		ttftGot += float64(rec.FirstToken - rec.Sent)
		ttftTrue += float64(t.Chunks[0].At.Sub(clock.Start().Add(rec.Sent)))
		for i := 1; i < len(rec.Chunks); i++ {
			itlGot = append(itlGot, stats.Weighted{V: float64(rec.Chunks[i].At-rec.Chunks[i-1].At) / float64(rec.Chunks[i].Tokens), W: rec.Chunks[i].Tokens})
		}
		for i := 1; i < len(t.Chunks); i++ {
			itlTrue = append(itlTrue, stats.Weighted{V: float64(t.Chunks[i].At.Sub(t.Chunks[i-1].At)) / float64(t.Chunks[i].Tokens), W: t.Chunks[i].Tokens})
		}
		if first.IsZero() || t.Arrived.Before(first) {
			first = t.Arrived
		}
		if l := t.Chunks[len(t.Chunks)-1].At; l.After(last) {
			last = l
		}
		tokens += t.OutputTokens
	}
	if n == 0 {
		return
	}
	r.compared = true
	r.TTFTErr = ttftGot/ttftTrue - 1
	r.ITLErr = stats.DescribeWeighted(itlGot).P50/stats.DescribeWeighted(itlTrue).P50 - 1
	r.AggErr = r.Received/(float64(tokens)/last.Sub(first).Seconds()) - 1
}

func (r selftestRow) perChunk() float64 {
	return float64(r.CPU.Microseconds()) / float64(max(r.Chunks, 1))
}

func (r selftestRow) accurate() bool {
	return r.compared && r.Errors == 0 && math.Abs(r.TTFTErr) <= 0.02 && math.Abs(r.ITLErr) <= 0.02 && math.Abs(r.AggErr) <= 0.02
}

func (r selftestRow) short() string {
	return fmt.Sprintf("%.0f of %.0f tok/s received, %.1f µs CPU per chunk, %.0f MB, TTFT %+.1f%%, ITL p50 %+.1f%%, aggregate %+.1f%%, %d errors",
		r.Received, r.Offered, r.perChunk(), r.RSSMB, 100*r.TTFTErr, 100*r.ITLErr, 100*r.AggErr, r.Errors)
}

func printSelftest(w io.Writer, rows []selftestRow) {
	fmt.Fprintln(w, "\n| streams | offered tok/s | received tok/s | CPU µs/token | CPU µs/chunk | bare reader µs/chunk | ratio | memory MB | chunks read late | TTFT err | ITL p50 err | aggregate err | errors |")
	fmt.Fprintln(w, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, r := range rows {
		bare, ratio := "-", "-"
		if r.BareChunks > 0 {
			b := float64(r.BareCPU.Microseconds()) / float64(r.BareChunks)
			bare, ratio = fmt.Sprintf("%.1f", b), fmt.Sprintf("%.2f×", r.perChunk()/b)
		}
		errCell := func(v float64) string {
			if !r.compared {
				return "-"
			}
			return fmt.Sprintf("%+.1f%%", 100*v)
		}
		fmt.Fprintf(w, "| %d | %.0f | %.0f | %.1f | %.1f | %s | %s | %.0f | %.1f%% | %s | %s | %s | %d |\n", r.Streams, r.Offered, r.Received,
			float64(r.CPU.Microseconds())/float64(max(r.Tokens, 1)), r.perChunk(), bare, ratio, r.RSSMB, 100*r.BufferedShare, errCell(r.TTFTErr), errCell(r.ITLErr), errCell(r.AggErr), r.Errors)
	}
	// The highest level up to which every level was accurate.
	upTo := 0
	for _, r := range rows {
		if !r.accurate() {
			break
		}
		upTo = r.Streams
	}
	fmt.Fprintln(w)
	if upTo == 0 {
		fmt.Fprintln(w, "accurate up to 0 streams: even the first level was off by more than 2% (or failed)")
	} else {
		fmt.Fprintf(w, "accurate up to %d streams (TTFT, median ITL and aggregate within 2%% of the simulator's truth, no errors)\n", upTo)
	}
}

// bareRead is the reference reader: the same requests with net/http, a
// timestamp per data line, nothing parsed; a warm-up wave first, then
// perStream requests per stream. It returns the CPU time and the chunks
// of the measured requests.
func bareRead(ctx context.Context, url string, streams, tokens, perStream int) (time.Duration, int) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, DisableCompression: true, Proxy: nil}}
	defer client.CloseIdleConnections()
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
	wave := func(n int) int {
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
	wave(1)
	runtime.GC()
	cpu0 := cpuTime()
	chunks := wave(perStream)
	return cpuTime() - cpu0, chunks
}
