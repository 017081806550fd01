package cli

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/workload"
)

// traceFlags are --trace, --speedup and --block-size of run.
type traceFlags struct {
	trace     string
	speedup   float64
	blockSize int
	loaded    *workload.Trace
}

func (f *traceFlags) register(fs *flagSet) {
	fs.StringVar(&f.trace, "trace", "", "replay a Mooncake-format trace (JSON lines of timestamp ms, input_length, output_length, hash_ids): each request at its timestamp, prompts built of blocks so that shared hash ids share text")
	fs.Float64Var(&f.speedup, "speedup", 1, "with --trace: replay this many times as fast as recorded (--requests N: its first N requests; --duration D: those due in the first D)")
	fs.IntVar(&f.blockSize, "block-size", workload.DefaultBlockSize, "with --trace: tokens of one hash id's block")
}

// check reads the trace, if any, and refuses what does not mix with it.
func (f *traceFlags) check(l *loadFlags) error {
	if f.trace == "" {
		// Zero: not registered (sweep, overhead).
		if (f.speedup != 1 && f.speedup != 0) || (f.blockSize != workload.DefaultBlockSize && f.blockSize != 0) {
			return usagef("--speedup and --block-size go with --trace")
		}
		return nil
	}
	switch {
	case !(f.speedup > 0) || math.IsInf(f.speedup, 0):
		return usagef("--speedup %g: want a positive number (2: twice as fast)", f.speedup)
	case f.blockSize < 1 || f.blockSize > workload.MaxLength:
		return usagef("--block-size %d: want 1 to %d tokens", f.blockSize, workload.MaxLength)
	case l.dataset != "" || l.corpus != "":
		return usagef("--trace builds its own prompts: it does not mix with --dataset or --corpus")
	case len(l.rates) > 0:
		return usagef("--trace sends its requests at its own times: drop --rate")
	case l.sharedPrefix > 0:
		return usagef("--trace shares what its hash ids share: drop --shared-prefix")
	}
	t, err := workload.LoadTrace(f.trace)
	if err != nil {
		return err
	}
	if err := t.Check(f.blockSize); err != nil {
		return err
	}
	f.loaded = t
	return nil
}

// traceCmd is tokperf trace stats FILE.
func traceCmd(_ context.Context, cmd string, args []string, e *env) error {
	fs := newFlags(cmd)
	block := fs.Int("block-size", workload.DefaultBlockSize, "tokens of one hash id's block")
	pos, err := parseMixed(fs, args, e)
	if err != nil {
		return err
	}
	if len(pos) != 2 || pos[0] != "stats" {
		return usagef("want: tokperf trace stats FILE")
	}
	if *block < 1 || *block > workload.MaxLength {
		return usagef("--block-size %d: want 1 to %d tokens", *block, workload.MaxLength)
	}
	if workload.IsAgentTrace(pos[1]) {
		t, err := workload.LoadAgentTrace(pos[1])
		if err != nil {
			return err
		}
		if err := t.Check(*block); err != nil {
			return err
		}
		writeAgentStats(e.stdout, t.Name, t.Stats(*block))
		return nil
	}
	t, err := workload.LoadTrace(pos[1])
	if err != nil {
		return err
	}
	if err := t.Check(*block); err != nil {
		return err
	}
	writeTraceStats(e.stdout, t.Name, t.Stats(*block))
	return nil
}

// writeTraceStats prints a trace's statistics.
func writeTraceStats(w io.Writer, name string, s workload.TraceStats) {
	fmt.Fprintf(w, "trace %s: %s over %.1f s", name, record.Plural(s.Requests, "request"), s.Span.Seconds())
	if s.Rate > 0 {
		fmt.Fprintf(w, ", %.2f requests/s, gaps' coefficient of variation %.2f (Poisson 1, bursts above)", s.Rate, s.GapCV)
	}
	fmt.Fprintln(w)
	for _, l := range []struct {
		name string
		d    workload.LengthStats
	}{{"input", s.Input}, {"output", s.Output}} {
		fmt.Fprintf(w, "%-6s tokens: mean %.0f, min %d, p50 %d, p90 %d, max %d\n", l.name, l.d.Mean, l.d.Min, l.d.P50, l.d.P90, l.d.Max)
	}
	fmt.Fprintf(w, "prefix reuse (blocks of %d tokens): %d blocks, %.1f%% seen before, %.1f%% as a prefix a cache can serve; %.1f%% of input tokens (the hit rate of a prefix cache that forgets nothing)\n",
		s.BlockSize, s.Blocks, 100*s.Reuse(), 100*s.PrefixReuse(), 100*s.TokenReuse())
}

// writeAgentStats prints an agent trace's statistics: its sessions, and
// the prefix cache's ceiling on their prompts.
func writeAgentStats(w io.Writer, name string, s workload.AgentTraceStats) {
	fmt.Fprintf(w, "agent trace %s (%s): %s, %s, %s; waits after turns: %.1f s in tools, %.1f s the user's\n",
		name, s.Format, record.Plural(s.Sessions, "session"), record.Plural(s.SubAgents, "sub-agent"), record.Plural(s.Turns, "turn"), s.ToolS, s.ThinkS)
	if s.Dropped > 0 {
		fmt.Fprintf(w, "%s of sub-agents not replayed (tokperf replays one level of sub-agents)\n", record.Plural(s.Dropped, "sub-agent"))
	}
	p := s.Prefix
	for _, l := range []struct {
		name string
		d    workload.LengthStats
	}{{"input", p.Input}, {"output", p.Output}} {
		fmt.Fprintf(w, "%-6s tokens a turn: mean %.0f, min %d, p50 %d, p90 %d, max %d\n", l.name, l.d.Mean, l.d.Min, l.d.P50, l.d.P90, l.d.Max)
	}
	fmt.Fprintf(w, "prefix cache ceiling (blocks of %d tokens, every session once): %.1f%% of input tokens a prefix cache that forgets nothing could serve; %d blocks, %.1f%% as a prefix seen before\n",
		p.BlockSize, 100*p.TokenReuse(), p.Blocks, 100*p.PrefixReuse())
}
