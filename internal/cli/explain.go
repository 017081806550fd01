package cli

import (
	"context"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/report"
)

// explainCmd is tokperf explain PEER TOKPERF: why another tool's figures
// of a server differ from a tokperf run's of the same server. A command
// of its own, not compare --explain: its two files are not alike (the
// other tool's figures, tokperf's records) and their order means
// something, where compare's runs are alike and tested for significance.
func explainCmd(ctx context.Context, cmd string, args []string, e *env) error {
	fs := newFlags(cmd)
	var format string
	registerFormat(fs, &format)
	stage := fs.Int("stage", 1, "which stage of the other tool's file to explain, from 1 (a GuideLLM report has one per benchmark)")
	pos, err := parseMixed(fs, args, e)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("give the other tool's result file, then tokperf's result file of the same server")
	}
	if *stage < 1 {
		return usagef("--stage counts from 1, got %d", *stage)
	}
	if err := checkFormat(format); err != nil {
		return err
	}
	if format == "png" {
		return usagef("explain draws no chart: --format text, json, csv, markdown or html")
	}
	if format == "html" && e.tty {
		return usagef("a page never goes to a terminal: redirect it (tokperf explain … --format html > explain.html)")
	}
	ex, err := bench.Explain(ctx, pos[0], pos[1], *stage-1)
	if ctx.Err() != nil {
		return errInterrupted
	}
	if err != nil {
		return err
	}
	return report.Render(e.stdout, format, ex)
}
