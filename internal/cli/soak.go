package cli

import (
	"context"
	"time"
)

// stabilityFlags are --slice (run, sweep, soak) and --repeat (run, sweep).
type stabilityFlags struct {
	slice  time.Duration
	repeat int
}

func (f *stabilityFlags) register(fs *flagSet, cmd string) {
	def := time.Duration(0)
	if cmd == "soak" {
		def = time.Minute
	}
	fs.DurationVar(&f.slice, "slice", def, "cut each stage into time slices of this length, each written to the result file as it ends, and judge their stability: trend per hour, change points, server memory growth (0: no slices)")
	f.repeat = 1
	if cmd != "soak" {
		fs.IntVar(&f.repeat, "repeat", 1, "run each stage this many times, interleaved (1 2 3 … 1 2 3 …), and report the mean, a 95% interval and the spread across repeats")
	}
	if cmd == "soak" {
		// A soak is one level for an hour unless told otherwise.
		if d := fs.Lookup("duration"); d != nil {
			d.Value.Set("1h")
			d.DefValue = "1h0m0s"
		}
	}
}

func (f *stabilityFlags) check(l *loadFlags) error {
	switch {
	case f.slice < 0:
		return usagef("--slice must not be negative")
	case f.slice > 0 && f.slice < time.Second:
		return usagef("--slice %v: a slice of under a second holds too few requests; try 1m", f.slice)
	case f.slice > 0 && l.duration == 0:
		return usagef("--slice needs --duration: slices cut a stage that runs for a set time")
	case f.slice > 0 && l.duration < 6*f.slice:
		return usagef("--slice %v with --duration %v: a stability verdict needs at least 6 slices after the warm-up one", f.slice, l.duration)
	case f.slice > 0 && l.untilSaturated:
		return usagef("--slice does not mix with --until-saturated: slice a fixed set of levels")
	case f.repeat < 1 || f.repeat > maxRepeat:
		return usagef("--repeat %d: want 1 or more, at most %d", f.repeat, maxRepeat)
	case f.repeat > 1 && f.slice > 0:
		return usagef("--repeat with --slice: repeat short stages, or slice one long one, not both")
	case f.repeat > 1 && l.untilSaturated:
		return usagef("--repeat does not mix with --until-saturated")
	}
	return nil
}

// soakCmd is tokperf soak: one level for a long time (--duration, default
// an hour) in slices of a minute, with the stability verdict.
func soakCmd(ctx context.Context, cmd string, args []string, e *env) error {
	return loadCmd(ctx, cmd, args, e)
}
