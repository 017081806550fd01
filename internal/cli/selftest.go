package cli

import (
	"context"

	"github.com/tokperf/tokperf/internal/bench"
)

// selftestCmd is tokperf selftest: how far tokperf stays accurate on this
// machine, the simulator in its own process as the ground truth.
func selftestCmd(ctx context.Context, cmd string, args []string, e *env) error {
	fs := newFlags(cmd)
	var levels ints
	levels.Set("32,256,1024,4096,10000")
	fs.Var(&levels, "streams", "concurrent streams per level")
	rate := fs.Float64("stream-rate", 25, "tokens per second each stream receives")
	tokens := fs.Int("tokens", 50, "output tokens per request")
	out := fs.StringP("out", "o", "", "result file (default ./tokperf-results/TIMESTAMP-selftest.jsonl)")
	registerForce(fs, &e.bench.Force)
	var format string
	registerFormat(fs, &format)
	minChunks := fs.Int("min-chunks", 20000, "chunks each reader reads per level at least (streams run several requests in turn), so short levels are not noise")
	bare := fs.Bool("bare", true, "also run the bare reference reader at each level")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of tokperf's side to this file")
	if err := parse(fs, args, e); err != nil {
		return err
	}
	if err := checkFormat(format); err != nil {
		return err
	}
	if !(*rate > 0) || *tokens < 2 {
		return usagef("--stream-rate must be positive and --tokens at least 2")
	}
	if err := within("--tokens", *tokens, 2, maxOutTokens); err != nil {
		return err
	}
	if err := within("--min-chunks", *minChunks, 0, maxRequests); err != nil {
		return err
	}
	if err := eachWithin("--streams", levels, 1, maxLevel); err != nil {
		return err
	}
	res, err := bench.Selftest(ctx, bench.SelftestConfig{Streams: levels, StreamRate: *rate, Tokens: *tokens, MinChunks: *minChunks,
		Bare: *bare, CPUProfile: *cpuprofile, Out: *out}, e.progress(nil))
	if err != nil {
		return err
	}
	if err := e.render(format, res, res.File); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	return nil
}
