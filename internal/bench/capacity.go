package bench

import (
	"context"
	"fmt"
)

// CapacitySessions is a capacity search's sessions a level when none are
// asked for: twelve rounds of the level, at least 96, so that its blocks
// of half a round's sessions are two dozen draws or more, and a few
// turns a session give the several hundred turns a p99's interval needs
// to have an upper end (1% of them above it, known to within a fraction
// of that even when the turns of a block move together).
func CapacitySessions(c int) int { return max(96, 12*c) }

// searchCapacity is --until-slo: after the sweep's levels, more levels of
// concurrent sessions as the capacity judged so far asks for them, each
// judged as it ends.
func (s *sweep) searchCapacity(ctx context.Context) {
	for ctx.Err() == nil && s.gone == nil && s.virtErr == nil {
		c := s.fold.Run().Capacity
		if n := len(s.figures); n > 0 {
			last := s.figures[n-1].Concurrency
			for _, lv := range c.Levels {
				if lv.Concurrency == last {
					fmt.Fprintf(s.progress, "--until-slo: C=%d %s: %d sessions in %d blocks, TTFT p99 %s ms, TPOT p99 %s ms\n", last, lv.Verdict, lv.Sessions, lv.Blocks, lv.TTFT, lv.TPOT)
				}
			}
		}
		next := c.Next(s.cfg.Load.MaxConcurrency)
		if next == 0 {
			fmt.Fprintf(s.progress, "--until-slo: %s\n", c.Answer)
			return
		}
		s.stage(ctx, s.cfg.Load.level(len(s.figures), next))
	}
}
