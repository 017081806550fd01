package sim

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A starved engine (each step's wake-up 5 ms late, as on a machine whose
// cores are busy) counts every step late; a healthy one counts none. The
// real time the steps took is their modelled time plus what the stalls
// cost the engine's pace.
func TestLatenessCountsStarvedSteps(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		stall time.Duration
		late  bool
	}{
		{"healthy", 0, false},
		{"within-tolerance", time.Millisecond, false},
		{"starved", 5 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				e := NewEngine(mustProfile(t, "tiny"))
				if tc.stall > 0 {
					e.stall = func() { time.Sleep(tc.stall) }
				}
				go e.Run(ctx)
				st, _ := e.Submit(Job{PromptTokens: 10, MaxTokens: 20, Length: 20})
				drain(st)
				l := e.Lateness()
				if l.Steps != 20 {
					t.Errorf("%d steps, want 20 (one prefill, 19 decodes)", l.Steps)
				}
				// The pace lost: every stall of a starved engine; of stalls
				// the schedule catches up on (under 5 ms), only the last.
				want := Lateness{Steps: 20, Planned: l.Planned, Ran: l.Planned + tc.stall}
				if tc.late {
					want = Lateness{Steps: 20, Late: 20, Total: 20 * tc.stall, Worst: tc.stall, Planned: l.Planned, Ran: l.Planned + 20*tc.stall}
				}
				if l.Planned <= 0 {
					t.Errorf("no modelled step time: %+v", l)
				}
				if l != want {
					t.Errorf("lateness %+v, want %+v", l, want)
				}
				if got := st.lateSteps.Load(); got != want.Late {
					t.Errorf("the request saw %d late steps, want %d", got, want.Late)
				}
			})
		})
	}
}

// The lateness reaches /metrics, the trace answer, each traced request and
// Server.Lateness.
func TestLatenessReported(t *testing.T) {
	t.Parallel()
	starve := func(s *Server) { s.eng.stall = func() { time.Sleep(10 * time.Millisecond) } }
	serveVirtualWith(t, mustProfile(t, "tiny"), Options{}, starve, func(c *http.Client, s *Server) {
		do(t, c, "POST", "/v1/completions", `{"prompt":"a b","max_tokens":5,"ignore_eos":true,"stream":true}`)
		if l := s.Lateness(); l.Steps != 5 || l.Late != 5 || l.Worst != 10*time.Millisecond {
			t.Errorf("Server.Lateness %+v, want 5 steps, all 10 ms late", l)
		}
		// Each step took its modelled time and the 10 ms stall: the pace
		// lost is the stalls' share of the time the steps took.
		if l := s.Lateness(); l.Planned <= 0 || l.Ran-l.Planned != 50*time.Millisecond {
			t.Errorf("Server.Lateness %+v, want the steps' real time 50 ms over their modelled time", l)
		}
		_, _, m := do(t, c, "GET", "/metrics", "")
		for _, line := range []string{"tokperf_sim_steps_total 5\n", "tokperf_sim_late_steps_total 5\n", "tokperf_sim_lateness_seconds_total 0.05\n", "tokperf_sim_lateness_seconds_max 0.01\n", "tokperf_sim_busy_seconds_total "} {
			if !strings.Contains(string(m), line) {
				t.Errorf("/metrics lacks %q", line)
			}
		}
		_, _, body := do(t, c, "GET", "/sim/trace", "")
		var tr struct {
			Requests []TraceRequest     `json:"requests"`
			Lateness map[string]float64 `json:"lateness"`
		}
		if err := json.Unmarshal(body, &tr); err != nil {
			t.Fatal(err)
		}
		if tr.Lateness["late_steps"] != 5 || tr.Lateness["lateness_max_s"] != 0.01 {
			t.Errorf("trace lateness %v", tr.Lateness)
		}
		if len(tr.Requests) != 1 || tr.Requests[0].LateSteps != 5 || tr.Requests[0].LatenessMax != 10*time.Millisecond {
			t.Errorf("traced request %+v, want 5 late steps, 10 ms at worst", tr.Requests)
		}
	})
}

// The same in real time, through HTTP: a step loop that sleeps 20 ms a
// step on 1 ms steps can only be late (a sleep never ends early), so every
// step counts, however busy the machine running the test is.
//
// Serial: real time: steps starved on a real clock.
func TestLatenessRealTime(t *testing.T) {
	const stall = 20 * time.Millisecond
	srv := New(mustProfile(t, "tiny"), Options{})
	srv.eng.stall = func() { time.Sleep(stall) }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-done }()
	resp, err := http.Post("http://"+ln.Addr().String()+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"a b","max_tokens":8,"ignore_eos":true,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if l := srv.Lateness(); l.Steps != 8 || l.Late != 8 || l.Worst < stall || l.Total < 8*stall {
		t.Errorf("lateness %+v, want all 8 steps late by at least %v", l, stall)
	}
}
