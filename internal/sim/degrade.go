package sim

import (
	"math"
	"time"
)

// Degrade makes the simulated server get worse on purpose as it runs, so
// a stability verdict has a known truth to be held to. Every figure is
// measured from the server's start on its own clock (time.Now, virtual
// in a synctest bubble). All off by default.
type Degrade struct {
	// StepGrowthPctPerH and StepGrowthPctPerMin make every step (decode
	// and prefill) take longer by this share of its profile time per hour
	// or per minute, growing linearly: 10 %/h is 1.2× after two hours.
	// At most one is set.
	StepGrowthPctPerH   float64 `yaml:"step_growth_pct_per_h"`
	StepGrowthPctPerMin float64 `yaml:"step_growth_pct_per_min"`
	// KVLeakTokensPerMin shrinks the KV pool by this many tokens a minute
	// (a leak), down to nothing: requests then wait for space, one at a
	// time at worst (a request is admitted alone whatever its size).
	KVLeakTokensPerMin float64 `yaml:"kv_leak_tokens_per_min"`
	// SlowdownAtS multiplies every step's time by SlowdownFactor from this
	// many seconds after the start: a sudden shift.
	SlowdownAtS    float64 `yaml:"slowdown_at_s"`
	SlowdownFactor float64 `yaml:"slowdown_factor"`
	// StallEveryS and StallS pause the engine for StallS at the start of
	// every StallEveryS (a garbage collector's pause): a step due to begin
	// inside a pause begins at its end.
	StallEveryS float64 `yaml:"stall_every_s"`
	StallS      float64 `yaml:"stall_s"`
	// ResidentGB and ResidentGBPerH make /metrics report
	// process_resident_memory_bytes, ResidentGB at the start and growing
	// by ResidentGBPerH (GB, 1e9 bytes) an hour: a memory leak.
	ResidentGB     float64 `yaml:"resident_gb"`
	ResidentGBPerH float64 `yaml:"resident_gb_per_h"`
}

func (d *Degrade) check() error {
	for name, v := range map[string]float64{"step_growth_pct_per_h": d.StepGrowthPctPerH, "step_growth_pct_per_min": d.StepGrowthPctPerMin,
		"kv_leak_tokens_per_min": d.KVLeakTokensPerMin, "slowdown_at_s": d.SlowdownAtS, "slowdown_factor": d.SlowdownFactor,
		"stall_every_s": d.StallEveryS, "stall_s": d.StallS, "resident_gb": d.ResidentGB, "resident_gb_per_h": d.ResidentGBPerH} {
		if !(v >= 0) || math.IsInf(v, 0) {
			return bad("degrade."+name, "must be a finite number, not negative, got %v", v)
		}
	}
	if d.StepGrowthPctPerH > 0 && d.StepGrowthPctPerMin > 0 {
		return bad("degrade.step_growth_pct_per_min", "give step_growth_pct_per_h or step_growth_pct_per_min, not both")
	}
	if (d.SlowdownAtS > 0) != (d.SlowdownFactor > 0) {
		return bad("degrade.slowdown_factor", "slowdown_at_s and slowdown_factor go together")
	}
	if d.SlowdownFactor > 0 && (d.SlowdownFactor < 0.01 || d.SlowdownFactor > 100) {
		return bad("degrade.slowdown_factor", "must be 0.01..100, got %v", d.SlowdownFactor)
	}
	if (d.StallEveryS > 0) != (d.StallS > 0) {
		return bad("degrade.stall_s", "stall_every_s and stall_s go together")
	}
	if d.StallS > 0 && d.StallS >= d.StallEveryS {
		return bad("degrade.stall_s", "must be shorter than stall_every_s (%v), got %v", d.StallEveryS, d.StallS)
	}
	return nil
}

// stepFactor is how many times its profile time a step takes at elapsed
// time since the start.
func (d *Degrade) stepFactor(elapsed time.Duration) float64 {
	if d == nil {
		return 1
	}
	f := 1 + (d.StepGrowthPctPerH/100)*elapsed.Hours() + (d.StepGrowthPctPerMin/100)*elapsed.Minutes()
	if d.SlowdownFactor > 0 && elapsed.Seconds() >= d.SlowdownAtS {
		f *= d.SlowdownFactor
	}
	return f
}

// stallLeft is how much of a pause is left at elapsed time (0 outside one).
func (d *Degrade) stallLeft(elapsed time.Duration) time.Duration {
	if d == nil || d.StallEveryS <= 0 {
		return 0
	}
	every := time.Duration(d.StallEveryS * float64(time.Second))
	pause := time.Duration(d.StallS * float64(time.Second))
	if in := elapsed % every; in < pause {
		return pause - in
	}
	return 0
}

// kvTokens is the KV pool's size at elapsed time.
func (d *Degrade) kvTokens(pool int, elapsed time.Duration) int {
	if d == nil || d.KVLeakTokensPerMin <= 0 {
		return pool
	}
	return max(pool-int(d.KVLeakTokensPerMin*elapsed.Minutes()), 0)
}

// resident is the resident memory reported at elapsed time, in bytes, and
// whether it is reported at all.
func (d *Degrade) resident(elapsed time.Duration) (float64, bool) {
	if d == nil || (d.ResidentGB == 0 && d.ResidentGBPerH == 0) {
		return 0, false
	}
	return (d.ResidentGB + d.ResidentGBPerH*elapsed.Hours()) * 1e9, true
}
