package analyze

import (
	"strings"
	"testing"
	"time"
)

// The self-test's range ends at the last accurate level, and the reason is
// computed from the first inaccurate level's own figures.
func TestSelftestEndsBecause(t *testing.T) {
	t.Parallel()
	ok := SelftestLevel{Streams: 32, Compared: true, CPU: time.Second, Wall: 10 * time.Second}
	for _, c := range []struct {
		name string
		bad  SelftestLevel
		cpus int
		up   int
		want []string // in EndsBecause
		not  []string
	}{
		{name: "the machine full and the client late",
			bad:  SelftestLevel{Streams: 10000, Compared: true, ITLErr: -1, CPU: 9 * time.Second, SimCPU: 10 * time.Second, Wall: 10 * time.Second, BufferedShare: 0.72},
			cpus: 2, up: 32,
			want: []string{"at 10000 streams: median ITL -100.0%", "the client used 0.90 CPUs and the simulator 1.00, 95% of the 2 CPUs (the machine was full)", "72.0% of chunks already waiting"},
			not:  []string{"TTFT", "aggregate", "steps late", "kernel"}},
		{name: "the simulator starved, the machine not full",
			bad:  SelftestLevel{Streams: 4096, Compared: true, AggErr: 0.05, CPU: time.Second, SimCPU: 2 * time.Second, Wall: 10 * time.Second, SimSteps: 1000, SimLateSteps: 300},
			cpus: 4, up: 32,
			want: []string{"aggregate +5.0%", "the simulator ran 30% of its steps late", "8% of the 4 CPUs"},
			not:  []string{"machine was full", "waiting"}},
		{name: "errors, the simulator's CPU unknown",
			bad:  SelftestLevel{Streams: 256, Compared: true, Errors: 3, CPU: time.Second, Wall: 4 * time.Second},
			cpus: 2, up: 32,
			want: []string{"3 requests failed", "the client used 0.25 CPUs"},
			not:  []string{"simulator"}},
		{name: "the kernel dropped packets",
			bad:  SelftestLevel{Streams: 10000, Compared: true, TTFTErr: 0.4, CPU: time.Second, Wall: 10 * time.Second, HostDropped: 27824, HostRetrans: 311},
			cpus: 2, up: 32,
			want: []string{"the kernel dropped 27824 packets at its input queue and resent 311 TCP segments", "net.core.netdev_max_backlog"},
			not:  []string{"steps late"}},
		{name: "the client's own connections resent segments, the machine more",
			bad:  SelftestLevel{Streams: 10000, Compared: true, TTFTErr: 0.4, CPU: time.Second, Wall: 10 * time.Second, HostDropped: 27824, HostRetrans: 311, OwnRetrans: 40, OwnRead: true},
			cpus: 2, up: 32,
			want: []string{"the client's own connections resent 40 TCP segments", "the machine's kernel dropped 27824 packets", "net.core.netdev_max_backlog"},
			not:  []string{"311"}},
		{name: "only other processes resent segments",
			bad:  SelftestLevel{Streams: 256, Compared: true, HostRetrans: 311, OwnRead: true},
			cpus: 2, up: 256},
		{name: "every level accurate", bad: SelftestLevel{Streams: 256, Compared: true}, cpus: 2, up: 256},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := Selftest{CPUs: c.cpus, Levels: []SelftestLevel{ok, c.bad}}
			s.Conclude()
			if s.AccurateUpTo != c.up {
				t.Errorf("accurate up to %d, want %d", s.AccurateUpTo, c.up)
			}
			if c.want == nil && s.EndsBecause != "" {
				t.Errorf("ends because %q, want nothing", s.EndsBecause)
			}
			for _, w := range c.want {
				if !strings.Contains(s.EndsBecause, w) {
					t.Errorf("ends because %q, want %q in it", s.EndsBecause, w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(s.EndsBecause, w) {
					t.Errorf("ends because %q, want no %q", s.EndsBecause, w)
				}
			}
		})
	}
}
