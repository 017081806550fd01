package cli

import (
	"context"
	"fmt"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/report"
)

// overheadCmd is tokperf overhead: the raw generation endpoint against the
// chat API on the same server, paired request by request.
func overheadCmd(ctx context.Context, cmd string, args []string, e *env) error {
	fs := newFlags(cmd)
	var f loadFlags
	f.register(fs, cmd)
	fs.Lookup("output-tokens").DefValue = "200"
	f.outputTokens.Set("200")
	f.conc.Set("1,8,32")
	fs.Lookup("concurrency").DefValue = "1,8,32"
	if err := parse(fs, args, e); err != nil {
		return err
	}
	if err := f.check(fs); err != nil {
		return err
	}
	f.warn(e)
	f.runSeed()
	if len(f.rates) > 0 {
		return usagef("overhead is closed loop: give -c levels, not --rate")
	}
	if f.gpuMetrics != "" {
		return usagef("overhead reads no GPUs: --gpu-metrics is for run and sweep")
	}
	if f.endpoint == "chat" {
		return usagef("--endpoint names the raw endpoint to compare with chat; chat is the other side")
	}
	benv := e.progress(func(s record.Setup) { fmt.Fprintln(e.stderr, report.Short(s)) })
	benv.Force = f.force
	res, err := bench.Overhead(ctx, bench.OverheadConfig{Target: f.target(), Workload: f.workload(), Levels: f.conc, Requests: f.requestsOne(), Warmup: int(f.warmup), Timeout: f.timeout, Out: f.out}, benv)
	if err != nil {
		return err
	}
	if err := e.render(f.format, res, res.File); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	failed, total := 0, 0
	for _, l := range res.Levels {
		for _, s := range []int{l.Raw.Requests - l.Raw.OK - l.Raw.Cancelled, l.Chat.Requests - l.Chat.OK - l.Chat.Cancelled} {
			failed += s
		}
		total += l.Raw.Requests + l.Chat.Requests - l.Raw.Cancelled - l.Chat.Cancelled
	}
	return judge(failed, total, f.maxErrorRate)
}
