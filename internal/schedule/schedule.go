// Package schedule decides when open-loop requests start: arrival offsets
// from a stage's start for a rate, Poisson or constant. It is pure, so it is
// tested without a clock. Closed-loop concurrency is the runner's slots.
//
//	at := schedule.Arrivals(schedule.Poisson, 10, 100, 0, 1) // 100 arrivals at 10/s
package schedule

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Arrival is how open-loop arrivals are spaced.
type Arrival string

const (
	Poisson  Arrival = "poisson"  // exponential gaps: independent users
	Constant Arrival = "constant" // equal gaps of 1/rate
)

// Parse checks an arrival name.
func Parse(s string) (Arrival, error) {
	switch Arrival(s) {
	case Poisson, Constant:
		return Arrival(s), nil
	}
	return "", fmt.Errorf("unknown arrival %q (want poisson or constant)", s)
}

// Arrivals returns the arrival offsets at rate per second: n of them, or
// every one before the duration d, whichever ends first (a zero n or d is
// no limit; both zero is none). The first arrival is at 0.
func Arrivals(kind Arrival, rate float64, n int, d time.Duration, seed int64) []time.Duration {
	if rate <= 0 || (n == 0 && d <= 0) {
		return nil
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0xa77))
	var out []time.Duration
	t := 0.0
	for i := 0; n == 0 || i < n; i++ {
		at := time.Duration(t * float64(time.Second))
		if d > 0 && at >= d {
			break
		}
		out = append(out, at)
		if kind == Constant {
			t = float64(i+1) / rate
		} else {
			t += r.ExpFloat64() / rate
		}
	}
	return out
}
