package sim

import (
	"context"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func mustProfile(t testing.TB, name string) *Profile {
	t.Helper()
	p, err := LoadProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// decodeRates runs batch identical requests that start together and returns
// each one's decode tok/s, computed from the engine's own event times.
func decodeRates(t *testing.T, p *Profile, batch, prompt, out int) []float64 {
	t.Helper()
	var rates []float64
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		e := NewEngine(p)
		go e.Run(ctx)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range batch {
			st, err := e.Submit(Job{PromptTokens: prompt, MaxTokens: out, Length: out})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				var evs []Event
				for {
					<-st.Ready()
					evs = st.Take(evs)
					if n := len(evs); n > 0 && evs[n-1].Done {
						break
					}
				}
				first, last := evs[0], evs[len(evs)-1]
				rate := float64(last.Total-first.Tokens) / last.At.Sub(first.At).Seconds()
				mu.Lock()
				rates = append(rates, rate)
				mu.Unlock()
			})
		}
		wg.Wait()
		cancel()
	})
	return rates
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func TestSeedProfileDecodeSpeed(t *testing.T) {
	t.Parallel()
	p := mustProfile(t, "seed")
	want := map[int]float64{1: 176.2, 4: 159.4, 16: 120.3, 32: 81.2}
	prevAgg := 0.0
	for _, b := range []int{1, 4, 16, 32} {
		got := mean(decodeRates(t, p, b, 128, 1000))
		if math.Abs(got/want[b]-1) > 0.05 {
			t.Errorf("batch %d: decode %.1f tok/s per request, want %.1f ± 5%%", b, got, want[b])
		}
		agg := got * float64(b)
		if agg <= prevAgg {
			t.Errorf("batch %d: aggregate decode %.0f tok/s did not rise above %.0f", b, agg, prevAgg)
		}
		prevAgg = agg
		t.Logf("batch %2d: %.1f tok/s per request, %.0f aggregate", b, got, agg)
	}
}

func TestSeedMTPGainShrinksWithBatch(t *testing.T) {
	t.Parallel()
	base, mtp := mustProfile(t, "seed"), mustProfile(t, "seed-mtp")
	gain := func(b int) float64 {
		return mean(decodeRates(t, mtp, b, 128, 1000)) / mean(decodeRates(t, base, b, 128, 1000))
	}
	g1, g32 := gain(1), gain(32)
	t.Logf("MTP gain: %.2fx at batch 1, %.2fx at batch 32", g1, g32)
	if g1 < 1.8 {
		t.Errorf("MTP gain at batch 1 is %.2fx, want at least 1.8x", g1)
	}
	if g32 > g1-0.5 || g32 > 1.3 {
		t.Errorf("MTP gain at batch 32 is %.2fx, want clearly less than %.2fx at batch 1", g32, g1)
	}
}

// drain reads a stream to its end and returns its events.
func drain(st *Stream) []Event {
	var evs []Event
	for {
		<-st.Ready()
		evs = st.Take(evs)
		if n := len(evs); n > 0 && evs[n-1].Done {
			return evs
		}
	}
}

func TestQueueWhenFullAndCancelFreesSlot(t *testing.T) {
	t.Parallel()
	p := mustProfile(t, "tiny")
	p.MaxRunning = 2
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		e := NewEngine(p)
		go e.Run(ctx)
		a, _ := e.Submit(Job{PromptTokens: 10, MaxTokens: 100, Length: 100})
		b, _ := e.Submit(Job{PromptTokens: 10, MaxTokens: 100, Length: 100})
		c, _ := e.Submit(Job{PromptTokens: 10, MaxTokens: 100, Length: 100})
		evA := drain(a)
		evC := drain(c)
		if !evC[0].At.After(evA[len(evA)-1].At.Add(-time.Nanosecond)) {
			t.Errorf("third request got its first token at %v, before a slot freed at %v", evC[0].At, evA[len(evA)-1].At)
		}
		drain(b)

		// A cancelled request frees its slot at once: the waiting one starts
		// within a step, not after the cancelled one would have finished.
		long1, _ := e.Submit(Job{PromptTokens: 10, MaxTokens: 10000, Length: 10000})
		long2, _ := e.Submit(Job{PromptTokens: 10, MaxTokens: 10000, Length: 10000})
		waiter, _ := e.Submit(Job{PromptTokens: 10, MaxTokens: 5, Length: 5})
		time.Sleep(50 * time.Millisecond)
		cancelled := time.Now()
		e.Cancel(long1)
		ev := drain(waiter)
		if wait := ev[0].At.Sub(cancelled); wait > 5*time.Millisecond {
			t.Errorf("waiting request started %v after the cancel, want within a step", wait)
		}
		e.Cancel(long2)
		synctest.Wait()
		if r := e.Running.Load(); r != 0 {
			t.Errorf("%d requests still running after cancelling all", r)
		}
	})
}

func TestSpeculativeChunksCarrySeveralTokens(t *testing.T) {
	t.Parallel()
	p := mustProfile(t, "seed-mtp")
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		e := NewEngine(p)
		go e.Run(ctx)
		st, _ := e.Submit(Job{PromptTokens: 10, MaxTokens: 2000, Length: 2000})
		evs := drain(st)
		perChunk := float64(evs[len(evs)-1].Total) / float64(len(evs))
		if want := p.TokensPerStep(); math.Abs(perChunk/want-1) > 0.05 {
			t.Errorf("%.2f tokens per chunk, want τ = %.2f ± 5%%", perChunk, want)
		}
	})
}
