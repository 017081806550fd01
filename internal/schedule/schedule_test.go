package schedule

import (
	"math"
	"testing"
	"time"
)

func TestArrivals(t *testing.T) {
	t.Parallel()
	c := Arrivals(Constant, 4, 5, 0, 1)
	for i, at := range c {
		if want := time.Duration(i) * 250 * time.Millisecond; at != want {
			t.Errorf("constant arrival %d at %v, want %v", i, at, want)
		}
	}
	// Poisson: the mean gap is 1/rate, and the same seed gives the same arrivals.
	p := Arrivals(Poisson, 10, 20000, 0, 7)
	mean := p[len(p)-1].Seconds() / float64(len(p)-1)
	if math.Abs(mean-0.1) > 0.003 {
		t.Errorf("mean Poisson gap %.4f s, want 0.1", mean)
	}
	if q := Arrivals(Poisson, 10, 20000, 0, 7); q[500] != p[500] {
		t.Error("same seed, different arrivals")
	}
	if d := Arrivals(Constant, 2, 0, 3*time.Second, 1); len(d) != 6 {
		t.Errorf("%d arrivals in 3 s at 2/s, want 6", len(d))
	}
}

// With both a count and a duration the arrivals end at whichever comes
// first; with neither there are none (not an endless schedule).
func TestArrivalsWhicheverFirst(t *testing.T) {
	t.Parallel()
	if got := len(Arrivals(Constant, 10, 100, 2*time.Second, 1)); got != 20 {
		t.Errorf("100 arrivals at 10/s within 2 s: %d, want 20", got)
	}
	if got := len(Arrivals(Constant, 10, 5, 2*time.Second, 1)); got != 5 {
		t.Errorf("5 arrivals at 10/s within 2 s: %d, want 5", got)
	}
	if got := Arrivals(Poisson, 10, 0, 0, 1); got != nil {
		t.Errorf("no count and no duration: %d arrivals, want none", len(got))
	}
}
