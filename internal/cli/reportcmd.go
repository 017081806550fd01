package cli

import (
	"flag"
	"fmt"
	"sort"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/report"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/summary"
	"github.com/tokperf/tokperf/internal/telemetry"
)

// reportCmd is tokperf report: the table and warnings of saved files.
func reportCmd(args []string, e *env) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	format := fs.String("format", "text", "text (the table is Markdown), json (every figure, warnings, verdict) or csv (the table)")
	paths, err := parseMixed(fs, args, e)
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		return usagef("give at least one result file")
	}
	switch *format {
	case "text", "json", "csv":
	default:
		return usagef("--format %q: want text, json or csv", *format)
	}
	for i, path := range paths {
		if i > 0 && *format == "text" {
			fmt.Fprintln(e.stdout)
		}
		// Records are folded into their stage's figures as they are read,
		// so a file of a million requests is never held in memory.
		r, f, err := results.Open(path)
		if err != nil {
			return err
		}
		accs, rates, n := map[int]*summary.Acc{}, map[int]float64{}, 0
		for r.Next() {
			rec := r.Record()
			n++
			a := accs[rec.Stage]
			if a == nil {
				a = summary.NewAcc(rec.Concurrency, r.Header().Setup.SLO)
				accs[rec.Stage], rates[rec.Stage] = a, rec.Rate
			}
			a.Add(&rec)
		}
		f.Close()
		if err := r.Err(); err != nil {
			return err
		}
		h := r.Header()
		notes := e.stdout
		if *format != "text" {
			notes = e.stderr // keep machine-readable output clean
		}
		if r.Truncated() {
			fmt.Fprintf(notes, "note: the last line of %s was cut short (the run crashed or was killed mid-write); it was skipped\n", path)
		}
		if r.End() == nil {
			fmt.Fprintf(notes, "note: %s has no end line: the run did not finish cleanly; %d finished requests are kept\n", path, n)
		} else if r.End().Interrupted {
			fmt.Fprintf(notes, "note: the run in %s was interrupted; %d finished requests are kept\n", path, n)
		}
		var idx []int
		for k := range accs {
			idx = append(idx, k)
		}
		sort.Ints(idx)
		var sums []summary.Stage
		var views []*analyze.ServerView
		names := telemetry.EngineNames[h.Setup.Server.Engine]
		openLoop := false
		for _, k := range idx {
			a := accs[k]
			s := a.Stage()
			if rates[k] > 0 {
				openLoop = true
			}
			if s.Requests > 0 {
				sums = append(sums, s)
				var samples []telemetry.Sample
				for _, m := range r.Metrics() {
					if m.Stage == k {
						samples = append(samples, m)
					}
				}
				views = append(views, analyze.Server(s, a, samples, names))
			}
		}
		switch *format {
		case "json":
			if err := report.JSON(e.stdout, path, h.Setup, sums, warningsFor(h.Setup, sums, views, openLoop), verdictFor(sums, openLoop)); err != nil {
				return err
			}
		case "csv":
			report.CSV(e.stdout, sums)
		default:
			printReport(e.stdout, h.Setup, sums, views, openLoop)
		}
	}
	return nil
}
