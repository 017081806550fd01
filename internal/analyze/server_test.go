package analyze

import (
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/summary"
)

// received is a client that got tokens at a steady rate over a window.
type received struct {
	from, to time.Duration
	rate     float64 // tok/s
}

func (r received) Window() (time.Duration, time.Duration)  { return r.from, r.to }
func (r received) TokensIn(from, to time.Duration) float64 { return r.rate * (to - from).Seconds() }

var names = engine.Metrics{Running: "run", Generated: "gen"}

// samples scrapes a server generating rate tok/s once a second for n s.
func samples(n int, rate float64, extra func(i int, v map[string]float64)) []record.ServerSample {
	var out []record.ServerSample
	for i := 0; i <= n; i++ {
		v := map[string]float64{"run": 4, "gen": rate * float64(i)}
		if extra != nil {
			extra(i, v)
		}
		out = append(out, record.ServerSample{At: time.Duration(i) * time.Second, Values: v})
	}
	return out
}

func warned(r *ServerReading, check string) bool {
	for _, w := range r.warnings(summary.Stage{Concurrency: 4}, Asked{}) {
		if w.Check == check {
			return true
		}
	}
	return false
}

// The counters are set beside the client only over windows of five scrape
// intervals or more, and a difference is a warning only beyond what one
// interval explains.
func TestServerRateComparison(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		seconds       int
		server, got   float64
		compared, bad bool
	}{
		{"a 2 s stage is too short to say", 2, 100, 73, false, false},
		{"agreeing", 20, 100, 99, true, false},
		{"within the interval's uncertainty", 10, 100, 86, true, false}, // −14% < 5% + 10%
		{"tokens lost", 20, 100, 80, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ServerOf(received{0, time.Duration(tc.seconds) * time.Second, tc.got}, samples(tc.seconds, tc.server, nil), names)
			if _, ok := r.RateDiff(); ok != tc.compared || warned(r, "server_rate") != tc.bad {
				t.Errorf("compared %v, warned %v; want %v and %v (%+v)", ok, warned(r, "server_rate"), tc.compared, tc.bad, r)
			}
		})
	}
	atEnd := names
	atEnd.CountersAtEnd = true
	if r := ServerOf(received{0, 20 * time.Second, 50}, samples(20, 100, nil), atEnd); r.GeneratedTokS != nil || warned(r, "server_rate") {
		t.Errorf("counters that move at request end were compared: %+v", r)
	}
}

// The simulator's machine dropping packets or resending segments is
// warned of as the whole machine's counts, never as this run's stalls
// (other processes' resends are in them); a machine that lost nothing
// says nothing.
func TestKernelDrops(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dropped, retrans float64
		warn             bool
		want             string
	}{{0, 0, false, ""}, {3, 0, true, "dropped 3 packets"}, {0, 9, false, ""}, {0, 12, true, "sent 12 TCP segments again during the stage (the whole machine's counts, other processes' included"},
		{50, 20, true, "dropped 50 packets"}} {
		r := ServerOf(received{0, 10 * time.Second, 100}, samples(10, 100, func(i int, v map[string]float64) {
			v[engine.SimHostDropped], v[engine.SimHostRetrans] = 1000+tc.dropped*float64(i)/10, 7+tc.retrans*float64(i)/10
		}), names)
		var got []Warning
		for _, w := range r.warnings(summary.Stage{Concurrency: 4, Requests: 100}, Asked{}) {
			if w.Check == "kernel_drops" {
				got = append(got, w)
			}
		}
		if (len(got) == 1) != tc.warn || tc.warn && (!strings.Contains(got[0].Text, tc.want) || strings.Contains(got[0].Text, "the p99s are")) {
			t.Errorf("%.0f dropped, %.0f resent: warnings %+v, want %v with %q", tc.dropped, tc.retrans, got, tc.warn, tc.want)
		}
		// The backlog's advice only where the backlog dropped packets.
		if len(got) == 1 && strings.Contains(got[0].Text, "raise net.core.netdev_max_backlog") != (tc.dropped > 0) {
			t.Errorf("%.0f dropped, %.0f resent: %q: want the backlog advised only when packets were dropped", tc.dropped, tc.retrans, got[0].Text)
		}
	}
}

// A simulated server whose steps ran late says its figures are not its
// profile's; one that kept up says nothing.
func TestStarvedSimulator(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		late float64
		want bool
	}{{0, false}, {11, false}, {40, false}, {100, true}} {
		r := ServerOf(received{0, 10 * time.Second, 100}, samples(10, 100, func(i int, v map[string]float64) {
			v[engine.SimSteps], v[engine.SimLateSteps], v[engine.SimLatenessMax] = 100*float64(i), tc.late*float64(i)/10, 0.2
		}), names)
		if got := warned(r, "starved_simulator"); got != tc.want {
			t.Errorf("%.0f of 1000 steps late: warned %v, want %v", tc.late, got, tc.want)
		}
		if tc.want {
			w := r.warnings(summary.Stage{Concurrency: 4}, Asked{})
			if !strings.Contains(w[len(w)-1].Text, "100 of its 1000 engine steps ran late (10.0%, the worst by 200 ms)") {
				t.Errorf("%s", w[len(w)-1].Text)
			}
		}
	}
}
