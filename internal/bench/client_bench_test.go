package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/workload"
)

// BenchmarkClientPerToken is the client's CPU and memory per output token
// of a whole `tokperf run` stage (the run model, live progress lines, the
// result file, the stage's figures) against the simulator in a process of
// its own (tokperf, built by the benchmark), at 1, 32, 256 and 1024
// streams; client=bare is the reference reader of selftest (net/http, a
// timestamp per data line, nothing parsed) on the same requests. Where
// the machine lets this process run on two CPUs, the simulator is pinned
// to one and the client (GOMAXPROCS 1) to the other. The figures are CPU
// time (getrusage), not wall time, so a loaded machine moves them less;
// compare two trees with benchstat:
//
//	go test ./internal/bench -run '^$' -bench ClientPerToken -count 6 | tee new.txt
//	benchstat old.txt new.txt
//
// Each step of the simulator takes 0.5 ms + 0.04 ms per stream: about
// 1,850 tok/s on one stream, 18,000 at 32 and 24,000–25,000 at 256 and
// 1024. ns/op is the wall time of one stage; cpu-µs/token, B/token and
// allocs/token are the client's alone.
func BenchmarkClientPerToken(b *testing.B) {
	if testing.Short() {
		b.Skip("builds tokperf and runs the simulator in its own process")
	}
	dir := b.TempDir()
	exe := filepath.Join(dir, "tokperf")
	build := exec.Command("go", "build", "-o", exe, "./cmd/tokperf")
	build.Dir = moduleRoot()
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build ./cmd/tokperf: %v\n%s", err, out)
	}
	profile := filepath.Join(dir, "bench.yaml")
	if err := writeSelftestProfile(profile, 0.5, 0.04, 2048); err != nil {
		b.Fatal(err)
	}
	client := pinApart(b)
	url, stop, _, err := startSimProcess(context.Background(), exe, profile)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(stop)
	if client != nil {
		if err := pinThreads(*client); err != nil {
			b.Fatal(err)
		}
	}
	const tokens = 50 // per request
	for _, c := range []int{1, 32, 256, 1024} {
		// At least 4,000 tokens per stage, the same number of requests
		// per stream, after a warm-up round of one request per stream;
		// the CPU and the tokens counted are the warm-up's and the stage's.
		perStream := (max(c, 4000/tokens) + c - 1) / c
		requests := perStream * c
		b.Run(fmt.Sprintf("client=tokperf/streams=%d", c), func(b *testing.B) {
			var cpu time.Duration
			var m0, m1 runtime.MemStats
			alloc, mallocs, got := uint64(0), uint64(0), 0
			out := filepath.Join(b.TempDir(), "r.jsonl")
			for b.Loop() {
				env := &Env{Progress: io.Discard, Live: ProgressLines}
				cfg := SweepConfig{Command: "run", Target: Target{URL: url, Endpoint: "completions", Model: "selftest"},
					Load:     Load{Concurrency: []int{c}, Requests: requests, Warmup: -1, Timeout: 2 * time.Minute},
					Workload: workload.Synthetic{InputTokens: 8, OutputTokens: tokens, IgnoreEOS: true, Seed: 1}, Out: out}
				runtime.GC()
				runtime.ReadMemStats(&m0)
				c0 := cpuTime()
				run, err := Sweep(context.Background(), cfg, env)
				cpu += cpuTime() - c0
				runtime.ReadMemStats(&m1)
				if err != nil {
					b.Fatal(err)
				}
				s := run.Stages[0]
				if s.OK < requests || s.OutputTokens < requests*tokens {
					b.Fatalf("%d streams: %d of %d requests ok (%v), %d of %d tokens", c, s.OK, requests, s.Errors, s.OutputTokens, requests*tokens)
				}
				alloc += m1.TotalAlloc - m0.TotalAlloc
				mallocs += m1.Mallocs - m0.Mallocs
				got += s.OutputTokens + c*tokens // the warm-up round's too
			}
			reportPerToken(b, cpu, alloc, mallocs, got)
		})
		b.Run(fmt.Sprintf("client=bare/streams=%d", c), func(b *testing.B) {
			var cpu time.Duration
			var m0, m1 runtime.MemStats
			alloc, mallocs, want, got := uint64(0), uint64(0), (c+requests)*tokens, 0
			for b.Loop() {
				// A warm-up wave, then the stage's requests, as in the run.
				runtime.GC()
				runtime.ReadMemStats(&m0)
				c0 := cpuTime()
				wave, done := bareReader(context.Background(), url, c, tokens)
				chunks := wave(1) + wave(perStream)
				done()
				cpu += cpuTime() - c0
				runtime.ReadMemStats(&m1)
				if chunks < want {
					b.Fatalf("%d streams: %d of %d chunks", c, chunks, want)
				}
				alloc += m1.TotalAlloc - m0.TotalAlloc
				mallocs += m1.Mallocs - m0.Mallocs
				got += chunks
			}
			reportPerToken(b, cpu, alloc, mallocs, got)
		})
	}
}

// reportPerToken reports the client's CPU, bytes and allocations per
// output token.
func reportPerToken(b *testing.B, cpu time.Duration, alloc, mallocs uint64, tokens int) {
	n := float64(max(tokens, 1))
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/n, "cpu-µs/token")
	b.ReportMetric(float64(alloc)/n, "B/token")
	b.ReportMetric(float64(mallocs)/n, "allocs/token")
}

// pinApart, where this process may run on two CPUs or more, pins it to
// the second of them, so that a process started now (the simulator)
// inherits that CPU, and returns the first for the client once it has
// started; GOMAXPROCS is 1 until the benchmark ends, when the CPUs and
// GOMAXPROCS are restored. Nil where there is no second CPU.
func pinApart(b *testing.B) *cpuSet {
	cpus, err := allowedCPUs()
	if err != nil || len(cpus) < 2 {
		b.Logf("client and simulator share the CPUs (%v; %d allowed)", err, len(cpus))
		return nil
	}
	all := onlyCPU(cpus[0])
	for _, c := range cpus[1:] {
		all.Set(c)
	}
	if err := pinThreads(onlyCPU(cpus[1])); err != nil {
		b.Fatal(err)
	}
	prev := runtime.GOMAXPROCS(1)
	b.Cleanup(func() {
		pinThreads(all)
		runtime.GOMAXPROCS(prev)
	})
	client := onlyCPU(cpus[0])
	fmt.Fprintf(os.Stderr, "client on CPU %d, simulator on CPU %d\n", cpus[0], cpus[1])
	return &client
}
