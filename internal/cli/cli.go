// Package cli is tokperf's command line: each command turns its flags into
// a typed config, calls the job in internal/bench (or reads result files),
// renders the model it gets back through internal/report, and returns the
// exit code. It holds no measurement logic and touches no network itself.
//
//	os.Exit(cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/tokperf/tokperf/internal/bench"
)

// Version is tokperf's version.
const Version = "0.1.0"

// env is what a command may touch; tests replace the network in bench.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	bench          bench.Env
}

// Exit codes: what happened, for scripts and CI.
const (
	exitOK          = 0   // ran; every request ok (or within --max-error-rate)
	exitCouldNotRun = 1   // could not run: no server, every request failed, a bad file, an I/O error
	exitUsage       = 2   // the command line is wrong
	exitSomeFailed  = 3   // ran, but more requests failed than --max-error-rate allows
	exitVerdictFail = 4   // ran, and the verdict is a failure: a check failed, no experiment configuration passed
	exitInterrupted = 130 // stopped by a signal; what finished is kept and summarised
)

// Run runs tokperf with args (without the program name) and returns the
// exit code (exitOK … exitInterrupted).
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(ctx, args, &env{stdin: stdin, stdout: stdout, stderr: stderr, bench: bench.Env{Getenv: os.Getenv}})
}

// usageError is a mistake in the command line (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

var (
	// errInterrupted ends a run that was stopped by a signal after its summary.
	errInterrupted = errors.New("interrupted")
	// errCheckFailed ends tokperf check (and an experiment none of whose
	// configurations passed) with exitVerdictFail after its report.
	errCheckFailed = errors.New("check failed")
	errHelp        = errors.New("help shown")
)

// commandTable maps a command name to what runs it.
var commandTable = map[string]func(ctx context.Context, cmd string, args []string, e *env) error{
	"run":        loadCmd,
	"sweep":      loadCmd,
	"overhead":   overheadCmd,
	"selftest":   selftestCmd,
	"check":      checkCmd,
	"experiment": experimentCmd,
	"sim":        simCmd,
	"report":     reportCmd,
	"compare":    compareCmd,
	"baselines":  baselinesCmd,
}

func run(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stdout, helpText)
		return 0
	}
	bench.Version = Version
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "help", "-h", "--help":
		if len(rest) > 0 && commandTable[rest[0]] != nil {
			return run(ctx, []string{rest[0], "--help"}, e)
		}
		fmt.Fprint(e.stdout, helpText)
		return 0
	case "version", "--version":
		fmt.Fprintf(e.stdout, "tokperf %s (%s %s/%s)\n", Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return 0
	}
	if c := commandTable[cmd]; c != nil {
		err = c(ctx, cmd, rest, e)
	} else {
		var names []string
		for n := range commandTable {
			names = append(names, n)
		}
		slices.Sort(names)
		if near := closest(cmd, names); near != "" {
			err = usagef("unknown command %q: did you mean %s?", cmd, near)
		} else {
			err = usagef("unknown command %q (commands: sweep, run, overhead, check, experiment, report, compare, baselines, selftest, sim, version, help)", cmd)
		}
	}
	return exitCode(cmd, err, e)
}

// exitCode says what happened, on stderr where it is an error.
func exitCode(cmd string, err error, e *env) int {
	var ue *usageError
	var ce *bench.ConfigError
	var fe *failedError
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	case errors.Is(err, errCheckFailed):
		return exitVerdictFail
	case errors.Is(err, errInterrupted):
		fmt.Fprintln(e.stderr, "tokperf: interrupted; the summary above covers the requests that finished")
		return exitInterrupted
	case errors.As(err, &ue), errors.As(err, &ce):
		fmt.Fprintf(e.stderr, "tokperf %s: %v\n", cmd, err)
		if commandTable[cmd] != nil {
			fmt.Fprintf(e.stderr, "see: tokperf help %s\n", cmd)
		} else {
			fmt.Fprintln(e.stderr, "see: tokperf help")
		}
		return exitUsage
	case errors.As(err, &fe):
		fmt.Fprintf(e.stderr, "tokperf %s: %v\n", cmd, err)
		if fe.failed == fe.total {
			return exitCouldNotRun
		}
		return exitSomeFailed
	default:
		fmt.Fprintf(e.stderr, "tokperf %s: %v\n", cmd, oneLine(err))
		return exitCouldNotRun
	}
}

// failedError is a run whose failed requests are more than it allows.
type failedError struct {
	failed, total int
	limit         float64
}

func (e *failedError) Error() string {
	if e.failed == e.total {
		return fmt.Sprintf("every request failed (%d of %d): the figures above describe no successful request", e.failed, e.total)
	}
	return fmt.Sprintf("%d of %d requests failed (%.1f%%, over --max-error-rate %g)", e.failed, e.total, 100*float64(e.failed)/float64(e.total), e.limit)
}

// judge says whether failed of total requests are more than limit allows.
func judge(failed, total int, limit float64) error {
	if total == 0 || failed == 0 || (failed < total && float64(failed) <= limit*float64(total)) {
		return nil
	}
	return &failedError{failed: failed, total: total, limit: limit}
}

func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

const helpText = `tokperf measures how fast an LLM inference server really is.

Usage:
  tokperf sweep [flags]      one stage per concurrency level (default -c 1,4,16,32),
                             the headline table, warnings and a verdict on scaling
  tokperf run [flags]        one stage: closed loop (-c N) or open loop (--rate R)
  tokperf overhead [flags]   the raw generation endpoint against the chat API on the
                             same server, paired request by request (default -c 1,8,32)
  tokperf check [flags]      smoke and accuracy checks: sensible output, greedy
                             determinism, exact answers under load, --against a server
  tokperf experiment FILE    start each server configuration, wait ready, check, sweep,
                             stop it, and compare the ones that passed
  tokperf report FILE...     re-render saved result files
  tokperf compare A B...     A/B: each run against the first, with significance
  tokperf compare A --baseline NAME [--gpus N] [--claim 3x]
                             a run against a published baseline, per GPU, with fairness
  tokperf baselines [NAME]   the published baselines tokperf knows
  tokperf selftest           how many streams tokperf measures accurately on this machine
                             (the simulator in its own process, ground truth compared)
  tokperf sim [flags]        run the embedded simulated server on its own
  tokperf version
  tokperf help COMMAND       the flags of a command

Every command that prints results takes --format text|json|csv|markdown|html|png.
With no --url, sweep and run start the embedded simulated server (profile
"seed", the seed article's 8-GPU deployment) and say so: the first run needs
no GPU. Every figure is defined in docs/METRICS.md.
`
