package sim

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkStream1000 is how many tokens per second the tiny profile streams
// over loopback to 1,000 concurrent streams on this machine (the reader only
// counts events, so the figure is the simulator's capacity, not a client's).
func BenchmarkStream1000(b *testing.B) {
	const streams, tokens = 1000, 100
	p := mustProfile(b, "tiny")
	_, url, stop, err := Start(context.Background(), p, "127.0.0.1:0", Options{NoTrace: true})
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: streams, MaxConnsPerHost: streams, DisableCompression: true}}
	body := `{"prompt":"a b c d","max_tokens":100,"stream":true,"ignore_eos":true,"temperature":0}`
	total := 0
	start := time.Now()
	for b.Loop() {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range streams {
			wg.Go(func() {
				resp, err := client.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
				if err != nil {
					b.Error(err)
					return
				}
				defer resp.Body.Close()
				n := 0
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if bytes.HasPrefix(sc.Bytes(), []byte("data: {")) {
						n++
					}
				}
				mu.Lock()
				total += n
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	if total != b.N*streams*tokens {
		b.Fatalf("%d tokens, want %d", total, b.N*streams*tokens)
	}
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "tokens/s")
}
