package stability

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// A throughput that jumps +15% at minute 35 is the server improving when
// the host's CPU contention held steady, and the host's when the contention
// fell from 60% to 5% of the time at that slice (a neighbour that stopped):
// not improving, and the text says it was the host. Contention that
// changed elsewhere, or by less than HostShiftMin, takes nothing from the
// server. Over seeds, noise in the contention included.
func TestHostChangeIsNotTheServers(t *testing.T) {
	t.Parallel()
	at := minutes(90 * time.Minute)
	contention := func(rng *rand.Rand, from, to float64, step int) []float64 {
		h := make([]float64, len(at))
		for i := range h {
			h[i] = from
			if i >= step {
				h[i] = to
			}
			h[i] = math.Max(0, h[i]+0.02*rng.NormFloat64())
		}
		return h
	}
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 17))
		agg := series(at, rng, 0.02, func(h float64) float64 {
			if h*60 >= 35 {
				return 1150
			}
			return 1000
		})
		judge := func(host []float64) (Verdict, Figure) {
			v := Judge(Input{Slice: time.Minute, At: at, Warmup: 2, Host: host, Series: []Series{{Name: "aggregate", Field: "aggregate_tok_s", Unit: TokS, Values: agg}}})
			return v, find(t, v, "aggregate_tok_s")
		}
		for _, tc := range []struct {
			name string
			host []float64
			want string // the figure's state
		}{
			{"not measured", nil, "shift"},
			{"steady", contention(rng, 0.3, 0.3, 0), "shift"},
			{"changed at minute 70", contention(rng, 0.6, 0.05, 70), "shift"},
			{"changed by 5 points at the jump", contention(rng, 0.35, 0.3, 35), "shift"},
			{"fell from 60% to 5% at the jump", contention(rng, 0.6, 0.05, 35), "host"},
		} {
			v, f := judge(tc.host)
			if f.State != tc.want {
				t.Errorf("seed %d, contention %s: %s, want the figure's state %s", seed, tc.name, v.Text, tc.want)
				continue
			}
			if tc.want == "host" && (v.Kind == "improving" || v.Kind == "degrading" || !strings.Contains(v.Text, "at 35m with the host, not the server (CPU contended ") ||
				math.Abs(f.HostBefore-0.6) > 0.03 || math.Abs(f.HostAfter-0.05) > 0.03) {
				t.Errorf("seed %d: %s, want the move the host's", seed, v.Text)
			}
			if tc.want == "shift" && v.Kind != "improving" {
				t.Errorf("seed %d, contention %s: %s, want improving", seed, tc.name, v.Text)
			}
		}
	}
}
