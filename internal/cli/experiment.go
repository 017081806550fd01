package cli

import (
	"context"
	"path/filepath"
	"time"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/experiment"
)

// experimentCmd is tokperf experiment FILE.yaml: for each configuration,
// start it, wait until it is ready, check it answers correctly, sweep it,
// stop it and free its port; then compare the ones that passed.
func experimentCmd(ctx context.Context, cmd string, args []string, e *env) error {
	fs := newFlags(cmd)
	outDir := fs.StringP("out", "o", "", "directory for logs and result files (default ./tokperf-results/TIMESTAMP-experiment)")
	var format string
	registerFormat(fs, &format)
	pos, err := parseMixed(fs, args, e)
	if err != nil {
		return err
	}
	if err := checkFormat(format); err != nil {
		return err
	}
	if page(format) && e.tty {
		return pageOnTerminal(cmd, format) // no result file to sit beside
	}
	if len(pos) != 1 {
		return usagef("give one experiment file")
	}
	f, err := experiment.Load(pos[0])
	if err != nil {
		return err
	}
	dir := *outDir
	if dir == "" {
		dir = filepath.Join("tokperf-results", time.Now().Format("20060102-150405")+"-experiment")
	}
	// Progress goes with the text report to stdout; a machine-readable
	// report keeps stdout to itself.
	benv := e.progress(nil)
	if format == "text" {
		benv.Progress = e.stdout
	}
	res, err := bench.Experiment(ctx, f, dir, benv)
	if err != nil {
		return err
	}
	if err := e.render(format, res, ""); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	if res.Passed == 0 {
		return errCheckFailed // no configuration passed: the verdict above says so
	}
	return nil
}
