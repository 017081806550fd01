package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/backend"
	"github.com/tokperf/tokperf/internal/experiment"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/results"
	"github.com/tokperf/tokperf/internal/summary"
)

// outcome is what became of one configuration.
type outcome struct {
	name, status, reason, result, log string
	stopped                           time.Duration
	released                          string
	recs                              []record.Record
}

// experimentCmd is tokperf experiment FILE.yaml: for each configuration,
// start it, wait until it is ready, check it answers correctly, sweep it,
// stop it and free its port; then compare the ones that passed.
func experimentCmd(ctx context.Context, args []string, e *env) error {
	fs := flag.NewFlagSet("experiment", flag.ContinueOnError)
	outDir := fs.String("out", "", "directory for logs and result files (default ./tokperf-results/TIMESTAMP-experiment)")
	fs.StringVar(outDir, "o", "", "shorthand for --out")
	pos, err := parseMixed(fs, args, e)
	if err != nil {
		return err
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var outs []outcome
	for _, c := range f.Configs {
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(e.stdout, "== %s\n", c.Name)
		o := runConfig(ctx, f, c, dir, e)
		fmt.Fprintf(e.stdout, "%s: %s", c.Name, o.status)
		if o.reason != "" {
			fmt.Fprintf(e.stdout, " (%s)", o.reason)
		}
		fmt.Fprintf(e.stdout, "; stopped in %.1f s", o.stopped.Seconds())
		if o.released != "" {
			fmt.Fprintf(e.stdout, ", %s", o.released)
		}
		fmt.Fprintf(e.stdout, ", log %s\n", o.log)
		if o.status != "ok" {
			if tail := experiment.Tail(o.log, 8); tail != "" {
				fmt.Fprintf(e.stdout, "last lines of its log:\n%s\n", indent(tail))
			}
		}
		fmt.Fprintln(e.stdout)
		outs = append(outs, o)
	}
	printExperiment(e.stdout, f, outs)
	if ctx.Err() != nil {
		return errInterrupted
	}
	return nil
}

func indent(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

// runConfig takes one configuration from start to stop; whatever happens,
// its process group is stopped and its port freed before it returns.
func runConfig(ctx context.Context, f *experiment.File, c experiment.Config, dir string, e *env) (o outcome) {
	o = outcome{name: c.Name, status: "failed"}
	baseline, gpus := experiment.GPUMemory()
	p, err := experiment.Start(c, dir)
	if err != nil {
		o.reason = err.Error()
		return o
	}
	o.log = p.Log
	defer func() {
		o.stopped = p.Stop(time.Duration(c.GraceS * float64(time.Second)))
		if err := experiment.PortFree(c.URL, 30*time.Second); err != nil {
			o.reason += "; " + err.Error()
		}
		if gpus {
			took, err := experiment.WaitGPUFree(baseline, time.Minute)
			if err != nil {
				o.reason += "; " + err.Error()
			} else {
				o.released = fmt.Sprintf("GPU memory released after %.1f s", took.Seconds())
			}
		}
	}()
	// Ready: /health and /v1/models answer, unless the process ends first.
	rctx, cancel := context.WithTimeout(ctx, time.Duration(c.ReadyTimeoutS*float64(time.Second)))
	go func() {
		select {
		case <-p.Done():
			cancel()
		case <-rctx.Done():
		}
	}()
	took, err := backend.WaitReady(rctx, backend.NewClient(2, nil), c.URL, "", time.Duration(c.ReadyTimeoutS*float64(time.Second)))
	cancel()
	if exited, how := p.Exited(); exited {
		o.reason = "exited at start: " + how
		return o
	}
	if err != nil {
		o.reason = fmt.Sprintf("not ready after %.0f s", c.ReadyTimeoutS)
		return o
	}
	// Answering /health is not generating: wait for one 1-token generation
	// too, as --wait-ready does.
	if server, models, err := backend.Detect(ctx, backend.NewClient(2, nil), c.URL, ""); err == nil {
		model := ""
		if len(models) > 0 {
			model = models[0]
		}
		b, err := backend.New(backend.Config{URL: c.URL, Endpoint: backend.DefaultEndpoint(server.Engine), Engine: server.Engine, Model: model})
		if err == nil {
			more, err := firstGeneration(ctx, b, time.Duration(c.ReadyTimeoutS*float64(time.Second)))
			b.Close()
			if err != nil {
				o.reason = "answered /health but never generated: " + oneLine(err)
				return o
			}
			took += more
		}
	}
	fmt.Fprintf(e.stdout, "ready after %.1f s (health, models and a first generation)\n", took.Seconds())
	quiet := &env{stdin: e.stdin, stdout: e.stdout, stderr: io.Discard, getenv: e.getenv, listen: e.listen, dial: e.dial}
	if !f.Check.Skip {
		var buf bytes.Buffer
		sub := *quiet
		sub.stdout = &buf
		err := checkCmd(ctx, []string{"--url", c.URL, "--questions", strconv.Itoa(f.Check.Questions),
			"--min-accuracy", strconv.FormatFloat(f.Check.MinAccuracy, 'g', -1, 64), "-o", filepath.Join(dir, safeName(c.Name)+"-check.jsonl")}, &sub)
		for _, line := range strings.Split(buf.String(), "\n") {
			if strings.Contains(line, "accuracy") || strings.HasPrefix(line, "FAIL") {
				fmt.Fprintln(e.stdout, line)
			}
		}
		if errors.Is(err, errCheckFailed) {
			o.reason = "failed its correctness checks"
			return o
		}
		if err != nil {
			o.reason = "check: " + oneLine(err)
			return o
		}
	}
	o.result = filepath.Join(dir, safeName(c.Name)+".jsonl")
	sargs := []string{"--url", c.URL, "-o", o.result, "-c", levelsFlag(f.Sweep.Concurrency)}
	if f.Sweep.Requests > 0 {
		sargs = append(sargs, "--requests", strconv.Itoa(f.Sweep.Requests))
	}
	if f.Sweep.InputTokens > 0 {
		sargs = append(sargs, "--input-tokens", strconv.Itoa(f.Sweep.InputTokens))
	}
	if f.Sweep.OutputTokens > 0 {
		sargs = append(sargs, "--output-tokens", strconv.Itoa(f.Sweep.OutputTokens))
	}
	if f.Sweep.IgnoreEOS != nil {
		sargs = append(sargs, "--ignore-eos="+strconv.FormatBool(*f.Sweep.IgnoreEOS))
	}
	if f.Sweep.Endpoint != "" {
		sargs = append(sargs, "--endpoint", f.Sweep.Endpoint)
	}
	err = load(ctx, "sweep", sargs, quiet)
	_, recs, _, rerr := results.ReadAll(o.result)
	failures := 0
	for _, r := range recs {
		if !r.OK() {
			failures++
		}
	}
	if failures > 0 {
		// Requests failed: give a dying server a moment to finish dying.
		select {
		case <-p.Done():
		case <-time.After(2 * time.Second):
		}
	}
	if exited, how := p.Exited(); exited {
		o.reason = fmt.Sprintf("died mid-sweep (%d requests failed): %s", failures, how)
		return o
	}
	if err != nil && !errors.Is(err, errInterrupted) {
		o.reason = "sweep: " + oneLine(err)
		return o
	}
	if rerr != nil {
		o.reason = rerr.Error()
		return o
	}
	o.recs, o.status = recs, "ok"
	return o
}

func safeName(s string) string { return strings.NewReplacer("/", "_", " ", "_").Replace(s) }

func levelsFlag(cs []int) string {
	var s []string
	for _, c := range cs {
		s = append(s, strconv.Itoa(c))
	}
	return strings.Join(s, ",")
}

// printExperiment compares the configurations that passed, level by level,
// each against the first that passed, and names the best at each level.
func printExperiment(w io.Writer, f *experiment.File, outs []outcome) {
	var ok []outcome
	for _, o := range outs {
		if o.status == "ok" {
			ok = append(ok, o)
		}
	}
	fmt.Fprintf(w, "== comparison (aggregate tok/s; ratio to %s where significant, ~ where not)\n", firstName(ok))
	head, sep := "| C |", "|--:|"
	for _, o := range outs {
		head += " " + o.name + " |"
		sep += "--:|"
	}
	fmt.Fprintln(w, head+" best |")
	fmt.Fprintln(w, sep+"---|")
	var verdicts []string
	levels := make([]*analyze.Levels, len(outs))
	for i, o := range outs {
		levels[i] = analyze.LevelsOf(o.recs)
	}
	for _, c := range f.Sweep.Concurrency {
		row := fmt.Sprintf("| %d |", c)
		best, bestTokS := "", 0.0
		var base *analyze.Level
		for i, o := range outs {
			if o.status != "ok" {
				row += " FAILED |"
				continue
			}
			lv := levels[i].At(c)
			s := summary.Of(nil, c)
			if lv != nil {
				s = lv.Stage
			}
			cell := fmt.Sprintf("%.1f", s.AggregateTokS)
			if base == nil {
				base = lv
			} else if lv != nil {
				m := analyze.Pair(base, lv, c)[0]
				if m.Significant {
					cell += fmt.Sprintf(" (%.2f×)", m.Ratio)
				} else {
					cell += " (~)"
				}
			}
			if s.AggregateTokS > bestTokS {
				best, bestTokS = o.name, s.AggregateTokS
			}
			row += " " + cell + " |"
		}
		fmt.Fprintln(w, row+" "+or(best, "-")+" |")
		if best != "" {
			verdicts = append(verdicts, fmt.Sprintf("C=%d: %s (%.1f tok/s)", c, best, bestTokS))
		}
	}
	for _, o := range outs {
		if o.status != "ok" {
			fmt.Fprintf(w, "%s: FAILED — %s\n", o.name, o.reason)
		}
	}
	if len(verdicts) == 0 {
		fmt.Fprintln(w, "verdict: no configuration passed")
		return
	}
	fmt.Fprintln(w, "verdict: the best configuration that passed its checks, by level: "+strings.Join(verdicts, "; "))
}

func firstName(ok []outcome) string {
	if len(ok) == 0 {
		return "the first that passed"
	}
	return ok[0].name
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
