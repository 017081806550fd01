package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/report"
)

// chartFlags are report's --chart and --out: the one chart of a png, and
// a file to write instead of stdout.
type chartFlags struct {
	chart, out string
	gpus       int // report's --gpus
	force      bool
	hw         hwFlags // report's --model-params, --gpu-hour-price …
}

func (c *chartFlags) register(fs *flagSet) {
	fs.StringVar(&c.chart, "chart", "", "with --format png, the chart to draw: "+strings.Join(report.ChartNames, ", ")+" (a stage's: NAME@C=16; default: the first, or the last stage's)")
	fs.StringVarP(&c.out, "out", "o", "", "write the report to this file instead of stdout")
	fs.BoolVar(&c.force, "force", false, "replace the report's file (-o, or a page written beside the result file) if it exists")
}

// fresh refuses to replace a file that exists without --force.
func (c *chartFlags) fresh() error {
	if _, err := os.Lstat(c.out); err == nil && !c.force {
		return usagef("%s exists: --force replaces it, or -o names another file", c.out)
	}
	return nil
}

// together says whether format draws every file on one page (html, png).
func together(format string) bool { return format == "html" || format == "png" }

// write runs render with stdout sent to --out when given: the file is
// written only when the report is whole (an error leaves none).
func (c *chartFlags) write(e *env, render func(*env) error) error {
	if c.out == "" {
		return render(e)
	}
	if err := c.fresh(); err != nil {
		return err
	}
	var b bytes.Buffer
	out := *e
	out.stdout = &b
	if err := render(&out); err != nil {
		return err
	}
	return os.WriteFile(c.out, b.Bytes(), 0o644)
}

// reportTogether folds every file and renders them as one page or image,
// adding the verdicts each run withholds to withheld.
func (c *chartFlags) reportTogether(ctx context.Context, paths []string, format string, e *env, withheld *[]string) error {
	all, err := bench.ReadRuns(ctx, paths, false) // a sharded run's files are one run
	if ctx.Err() != nil {
		return errInterrupted
	}
	if err != nil {
		return err
	}
	setGPUs(all, c.gpus)
	if err := c.hw.apply(all); err != nil {
		return err
	}
	runs := report.Runs(all)
	var result any = runs
	if len(runs) == 1 {
		result = runs[0]
	}
	if c.chart != "" {
		result = report.Pick{Chart: c.chart, Result: result}
	}
	if err := report.Render(e.stdout, format, result); errors.Is(err, report.ErrNoChart) {
		return usagef("--chart: %v", err)
	} else if err != nil {
		return err
	}
	for _, r := range all {
		for _, w := range r.Withheld() {
			*withheld = append(*withheld, r.File+": "+w)
		}
	}
	return nil
}
