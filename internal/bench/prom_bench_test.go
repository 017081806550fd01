package bench

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/sim"
	"github.com/tokperf/tokperf/internal/workload"
)

// BenchmarkLiveOutputCPU measures the client's CPU per token chunk of a
// stage, as BenchmarkProgressCPU does, with no live output, with --live
// prometheus not scraped (the records' counting alone) and scraped every
// 10 ms (1500 times as often as Prometheus's default 15 s), to show what
// the live output costs the measurement:
//
//	go test ./internal/bench -run '^$' -bench LiveOutputCPU -benchtime 5x
func BenchmarkLiveOutputCPU(b *testing.B) {
	url, stop, _, err := startSimProcess(context.Background(), "", "tiny")
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	for _, m := range []struct {
		name         string
		live, scrape bool
	}{{"off", false, false}, {"prometheus", true, false}, {"prometheus-scraped", true, true}} {
		b.Run(m.name, func(b *testing.B) {
			var cpu time.Duration
			chunks := 0.0
			dir := b.TempDir()
			for b.Loop() {
				addrs := make(chan net.Addr, 1)
				env := &Env{Progress: io.Discard, Force: true, Listen: func(addr string) (net.Listener, error) {
					ln, err := sim.Listen(addr)
					if err == nil {
						addrs <- ln.Addr()
					}
					return ln, err
				}}
				cfg := SweepConfig{Command: "run", Target: Target{URL: url}, Load: Load{Concurrency: []int{32}, Requests: 128, Warmup: -1},
					Workload: workload.Synthetic{InputTokens: 16, OutputTokens: 256, IgnoreEOS: true, Seed: 1}, Out: filepath.Join(dir, "r.jsonl")}
				quit, done := make(chan struct{}), make(chan struct{})
				if m.live {
					cfg.Live = &Output{Kind: "prometheus", Addr: "127.0.0.1:0"}
				}
				if m.scrape {
					go scrapeEvery(10*time.Millisecond, addrs, quit, done)
				} else {
					close(done)
				}
				c0 := cpuTime()
				run, err := Sweep(context.Background(), cfg, env)
				close(quit)
				<-done
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

// scrapeEvery GETs /metrics at the address sent on addrs every d until quit.
func scrapeEvery(d time.Duration, addrs <-chan net.Addr, quit, done chan struct{}) {
	defer close(done)
	var addr net.Addr
	select {
	case addr = <-addrs:
	case <-quit:
		return
	}
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-quit:
			return
		case <-t.C:
			if resp, err := http.Get("http://" + addr.String() + "/metrics"); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}
}
