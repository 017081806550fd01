package sim

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// degraded is the tiny profile with a flat 10 ms step and d.
func degraded(t *testing.T, d Degrade) *Profile {
	t.Helper()
	p := *mustProfile(t, "tiny")
	p.Decode = Decode{Linear: &Linear{AMs: 10}}
	p.Prefill = Prefill{PerTokenUs: 1}
	p.Degrade = &d
	return &p
}

// decodeTime runs one request of n tokens on e and returns how long its
// tokens after the first took, by the engine's own event times.
func decodeTime(t *testing.T, e *Engine, n int) time.Duration {
	t.Helper()
	st, err := e.Submit(Job{PromptTokens: 1, MaxTokens: n, Length: n})
	if err != nil {
		t.Fatal(err)
	}
	var evs []Event
	for len(evs) == 0 || !evs[len(evs)-1].Done {
		<-st.Ready()
		evs = st.Take(evs)
	}
	return evs[len(evs)-1].At.Sub(evs[0].At)
}

func TestDegradeStepTime(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		d     Degrade
		at    time.Duration // when the second request starts
		ratio float64       // its decode time over the first's
	}{
		{"growth per hour", Degrade{StepGrowthPctPerH: 10}, time.Hour, 1.1},
		{"growth per minute", Degrade{StepGrowthPctPerMin: 1}, 30 * time.Minute, 1.3},
		{"before the slowdown", Degrade{SlowdownAtS: 600, SlowdownFactor: 1.5}, 5 * time.Minute, 1},
		{"after the slowdown", Degrade{SlowdownAtS: 600, SlowdownFactor: 1.5}, 11 * time.Minute, 1.5},
		{"both", Degrade{StepGrowthPctPerH: 20, SlowdownAtS: 600, SlowdownFactor: 2}, 2 * time.Hour, 1.4 * 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				e := NewEngine(degraded(t, tc.d))
				go e.Run(ctx)
				first := decodeTime(t, e, 11)
				time.Sleep(tc.at - time.Since(e.start))
				second := decodeTime(t, e, 11)
				if got := float64(second) / float64(first); got < tc.ratio*0.995 || got > tc.ratio*1.005 {
					t.Errorf("decode took %v at the start and %v at %v: ratio %.4f, want %.4f", first, second, tc.at, got, tc.ratio)
				}
			})
		})
	}
}

// A pause of 200 ms every 10 s holds back the step due inside it.
func TestDegradeStalls(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		e := NewEngine(degraded(t, Degrade{StallEveryS: 10, StallS: 0.2}))
		go e.Run(ctx)
		time.Sleep(time.Second) // out of the pause at the start
		// 1000 steps of 10 ms span the pauses at 10 s (and none at 0 s).
		got := decodeTime(t, e, 1001)
		if want := 10*time.Second + 200*time.Millisecond; got < want-15*time.Millisecond || got > want+15*time.Millisecond {
			t.Errorf("1000 steps took %v, want about %v (one pause)", got, want)
		}
	})
}

// A leaking pool first lets two requests run together, then one.
func TestDegradeKVLeak(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		p := degraded(t, Degrade{KVLeakTokensPerMin: 100})
		p.KVTokens = 1000 // two requests of 300 fit; after 5 minutes, one
		e := NewEngine(p)
		go e.Run(ctx)
		pair := func() time.Duration {
			start := time.Now()
			done := make(chan struct{})
			go func() { decodeTime(t, e, 299); close(done) }()
			decodeTime(t, e, 299)
			<-done
			return time.Since(start)
		}
		together := pair()
		time.Sleep(5 * time.Minute)
		apart := pair()
		if r := float64(apart) / float64(together); r < 1.9 || r > 2.1 {
			t.Errorf("two requests took %v with the whole pool and %v after the leak: ratio %.2f, want 2 (one at a time)", together, apart, r)
		}
	})
}

func TestDegradeResidentMemory(t *testing.T) {
	t.Parallel()
	read := func(t *testing.T, c *http.Client) (float64, bool) {
		_, _, m := do(t, c, "GET", "/metrics", "")
		for _, line := range strings.Split(string(m), "\n") {
			if v, ok := strings.CutPrefix(line, "process_resident_memory_bytes "); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				return f, true
			}
		}
		return 0, false
	}
	serveVirtualWith(t, degraded(t, Degrade{ResidentGB: 2, ResidentGBPerH: 1}), Options{}, nil, func(c *http.Client, s *Server) {
		a, ok := read(t, c)
		time.Sleep(90 * time.Minute)
		b, _ := read(t, c)
		if !ok || a < 2e9 || a > 2.001e9 || b-a < 1.499e9 || b-a > 1.501e9 {
			t.Errorf("resident %v then %v after 90 minutes, want 2e9 growing by 1.5e9", a, b)
		}
	})
	serveVirtualWith(t, mustProfile(t, "tiny"), Options{}, nil, func(c *http.Client, s *Server) {
		if _, ok := read(t, c); ok {
			t.Error("a profile without degrade reports resident memory")
		}
	})
}

func TestDegradeProfileErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, want string }{
		{"degrade: {step_growth_pct_per_h: -1}", "degrade.step_growth_pct_per_h: must be a finite number"},
		{"degrade: {step_growth_pct_per_h: 1, step_growth_pct_per_min: 1}", "not both"},
		{"degrade: {slowdown_at_s: 10}", "go together"},
		{"degrade: {stall_every_s: 1, stall_s: 2}", "must be shorter"},
	} {
		_, err := ParseProfile("p.yaml", []byte("name: x\ndecode: {linear: {a_ms: 1}}\nprefill: {per_token_us: 1}\n"+tc.yaml+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "p.yaml:4") {
			t.Errorf("%s: error %v, want p.yaml:4 … %q", tc.yaml, err, tc.want)
		}
	}
}
