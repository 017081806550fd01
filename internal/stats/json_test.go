package stats

import (
	"encoding/json"
	"math"
	"testing"
)

// A figure a summary read from elsewhere lacks is null, the rest as they are;
// an empty sample stays all zeros with n 0.
func TestDistJSONBlanks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		d    Dist
		want string
	}{
		{"partial", Dist{N: 3, Mean: 2, P50: 1.5, P90: math.NaN(), P95: math.NaN(), P99: 4, Max: math.NaN()}, `{"n":3,"mean":2,"p50":1.5,"p90":null,"p95":null,"p99":4,"max":null}`},
		{"whole", Describe([]float64{1, 2, 3}), `{"n":3,"mean":2,"p50":2,"p90":3,"p95":3,"p99":3,"max":3}`},
		{"empty", Describe(nil), `{"n":0,"mean":0,"p50":0,"p90":0,"p95":0,"p99":0,"max":0}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(c.d)
			if err != nil || string(b) != c.want {
				t.Errorf("got %s (%v), want %s", b, err, c.want)
			}
		})
	}
}
