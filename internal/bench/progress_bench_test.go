package bench

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/workload"
)

// BenchmarkProgressCPU measures the client's CPU per token chunk of a
// stage against a simulator in its own process (tokperf sim, the tiny
// profile: 1 ms steps), with live progress off, as plain lines and as a
// bar, both redrawn every 10 ms (50 to 500 times more often than a person
// sees them), to show that progress costs the measurement nothing:
//
//	go test ./internal/bench -run '^$' -bench ProgressCPU -benchtime 5x
func BenchmarkProgressCPU(b *testing.B) {
	url, stop, _, err := startSimProcess(context.Background(), "", "tiny")
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	for _, m := range []struct {
		name string
		mode ProgressMode
	}{{"off", ProgressOff}, {"lines", ProgressLines}, {"bars", ProgressBars}} {
		b.Run(m.name, func(b *testing.B) {
			var cpu time.Duration
			chunks := 0.0
			dir := b.TempDir()
			for b.Loop() {
				env := &Env{Progress: io.Discard, Live: m.mode, LiveEvery: 10 * time.Millisecond}
				cfg := SweepConfig{Command: "run", Target: Target{URL: url}, Load: Load{Concurrency: []int{32}, Requests: 128, Warmup: -1},
					Workload: workload.Synthetic{InputTokens: 16, OutputTokens: 256, IgnoreEOS: true, Seed: 1}, Out: filepath.Join(dir, "r.jsonl")}
				c0 := cpuTime()
				run, err := Sweep(context.Background(), cfg, env)
				cpu += cpuTime() - c0
				if err != nil {
					b.Fatal(err)
				}
				s := run.Stages[0]
				chunks += float64(s.OutputTokens) / s.TokensPerChunk
			}
			b.ReportMetric(float64(cpu.Microseconds())/chunks, "cpu-µs/chunk")
		})
	}
}
