package cli

import (
	"flag"
	"fmt"
	"sort"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
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
		h, recs, r, err := results.ReadAll(path)
		if err != nil {
			return err
		}
		notes := e.stdout
		if *format != "text" {
			notes = e.stderr // keep machine-readable output clean
		}
		if r.Truncated() {
			fmt.Fprintf(notes, "note: the last line of %s was cut short (the run crashed or was killed mid-write); it was skipped\n", path)
		}
		if r.End() == nil {
			fmt.Fprintf(notes, "note: %s has no end line: the run did not finish cleanly; %d finished requests are kept\n", path, len(recs))
		} else if r.End().Interrupted {
			fmt.Fprintf(notes, "note: the run in %s was interrupted; %d finished requests are kept\n", path, len(recs))
		}
		byStage := map[int][]record.Record{}
		for _, rec := range recs {
			byStage[rec.Stage] = append(byStage[rec.Stage], rec)
		}
		var idx []int
		for k := range byStage {
			idx = append(idx, k)
		}
		sort.Ints(idx)
		var sums []summary.Stage
		var views []*analyze.ServerView
		names := telemetry.EngineNames[h.Setup.Server.Engine]
		openLoop := false
		for _, k := range idx {
			rs := byStage[k]
			s := summary.OfSLO(rs, rs[0].Concurrency, h.Setup.SLO)
			if rs[0].Rate > 0 {
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
				views = append(views, analyze.Server(s, rs, samples, names))
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
