package cli

import (
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// untilSLO is sweep's --until-slo: a capacity search for concurrent agent
// sessions under p99 limits on their per-turn TTFT and TPOT.
type untilSLO struct {
	spec   string
	limits record.SLO // read by check
}

func (u *untilSLO) register(fs *flagSet) {
	fs.StringVar(&u.spec, "until-slo", "", "with --agent or --agent-trace: find how many concurrent sessions meet `LIMITS`, ttft_p99=DURATION and/or tpot_p99=DURATION (ttft_p99=2s,tpot_p99=50ms): levels double from the first -c while they pass, then bisect; a level passes when the 95% interval of each p99 is under its limit, fails when one is over, else cannot be told (docs/METRICS.md §3)")
}

// check reads the limits and refuses what does not mix with them.
func (u *untilSLO) check(f *loadFlags) error {
	if u.spec == "" {
		return nil
	}
	switch {
	case f.agent == "" && f.agentTrace == "":
		return usagef("--until-slo searches concurrent agent sessions: give --agent SHAPE or --agent-trace FILE")
	case f.untilSaturated:
		return usagef("--until-slo and --until-saturated each choose the levels: give one")
	case len(f.requests) > 1:
		return usagef("--until-slo chooses its own levels: give one --requests value")
	case f.concSet && len(f.conc) > 1:
		return usagef("--until-slo starts from one level: give one -c value")
	case !f.concSet:
		f.conc = ints{1}
	}
	for _, kv := range strings.Split(u.spec, ",") {
		key, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return usagef("--until-slo %s: %q is not a positive duration (as 2s or 50ms)", key, v)
		}
		switch key {
		case "ttft_p99":
			u.limits.TTFTMs = record.Ms(d)
		case "tpot_p99":
			u.limits.TPOTMs = record.Ms(d)
		default:
			return usagef("--until-slo %q: want ttft_p99=DURATION and/or tpot_p99=DURATION", kv)
		}
	}
	return nil
}
