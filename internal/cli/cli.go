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
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/term"
)

// version is set by the release build (-ldflags -X); otherwise the
// module version the Go toolchain stamped into the binary is used.
var version = ""

// Version is tokperf's version: the release's, or the module version Go
// stamped into the build (a tag, or a pseudo-version from the commit),
// "(devel)" when there is none.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// buildCommit is the VCS commit the binary was built from, with "+dirty"
// for uncommitted changes, or "".
func buildCommit() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	if dirty {
		rev += "+dirty"
	}
	if at != "" {
		rev += " " + at
	}
	return rev
}

// env is what a command may touch; tests replace the network in bench.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// results is where -o - writes a result file: the real stdout, when
	// stdout is pointed at stderr so nothing else reaches it.
	results io.Writer
	bench   bench.Env
	// listFlags makes --help print the command's flag names (for shell
	// completion) instead of its help.
	listFlags bool
	// parseOnly stops a command once its flags parsed (errParsed), for
	// the test that reads every README command line.
	parseOnly bool
	// dryRun stops run and sweep once everything they check before they
	// connect passed (errParsed): their flags and settings, and a shard's
	// start and stages. For the tests that run every command a
	// manifest generates.
	dryRun bool
	// tty says stdout is a terminal: a page (--format html or png) is
	// then written to a file, never to it (page.go); errTTY says the
	// same of stderr, where -o - sends the report.
	tty, errTTY bool
}

// Exit codes: what happened, for scripts and CI.
const (
	exitOK          = 0   // ran; every request ok (or within --max-error-rate)
	exitCouldNotRun = 1   // could not run: no server, every request failed, a bad file, an I/O error
	exitUsage       = 2   // the command line is wrong
	exitSomeFailed  = 3   // ran, but more requests failed than --max-error-rate allows, or some experiment configuration failed
	exitVerdictFail = 4   // ran, and the verdict is a failure: a check failed, no experiment configuration passed, a preset's verdict failed
	exitWithheld    = 5   // --strict: ran, but a verdict was withheld (a stage it rests on was not measured validly)
	exitInterrupted = 130 // stopped by a signal; what finished is kept and summarised
)

// Run runs tokperf with args (without the program name) and returns the
// exit code (exitOK … exitInterrupted). Everything it writes goes through
// term.Writer: a server's text cannot drive the terminal, and a reader
// that went away (a closed pipe) ends the output, not the measurement.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(ctx, args, &env{stdin: stdin, stdout: term.NewWriter(stdout), stderr: term.NewWriter(stderr), bench: bench.Env{Getenv: os.Getenv}, tty: isTerminal(stdout), errTTY: isTerminal(stderr)})
}

// isTerminal says whether w is a terminal: a character device other than
// the null device (> /dev/null is not a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
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
	"soak":       soakCmd,
	"overhead":   overheadCmd,
	"selftest":   selftestCmd,
	"check":      checkCmd,
	"experiment": experimentCmd,
	"sim":        simCmd,
	"report":     reportCmd,
	"compare":    compareCmd,
	"explain":    explainCmd,
	"baselines":  baselinesCmd,
	"config":     configCmd,
	"trace":      traceCmd,
	"fit":        twinCmd,
	"predict":    twinCmd,
	"k8s":        k8sCmd,
}

func init() { commandTable["completion"] = completionCmd } // it lists the table

// stampVersion names this build in the result files bench writes. Once:
// runs may share the process (tests call Run in parallel), and bench only
// reads it after.
var stampVersion = sync.OnceFunc(func() { bench.Version = Version() })

func run(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 {
		fmt.Fprint(e.stdout, helpText+presetsSummary())
		return 0
	}
	stampVersion()
	cmd, rest := args[0], args[1:]
	var err error
	switch cmd {
	case "help", "-h", "--help":
		if len(rest) > 0 && (rest[0] == "help" || rest[0] == "--help" || rest[0] == "-h") {
			fmt.Fprintln(e.stdout, "tokperf help lists the commands; tokperf help COMMAND (or tokperf COMMAND --help) shows its flags, grouped, with examples")
			return 0
		}
		if len(rest) > 0 && rest[0] == "presets" {
			fmt.Fprint(e.stdout, presetsHelp())
			return 0
		}
		if len(rest) > 0 && (rest[0] == "version" || rest[0] == "--version") {
			fmt.Fprint(e.stdout, versionHelp)
			return 0
		}
		if len(rest) > 0 && commandTable[rest[0]] == nil {
			return exitCode(cmd, usagef("unknown command %q%s", rest[0], didYouMean(rest[0])), e)
		}
		if len(rest) > 0 && commandTable[rest[0]] != nil {
			return run(ctx, []string{rest[0], "--help"}, e)
		}
		fmt.Fprint(e.stdout, helpText+presetsSummary())
		return 0
	case "version", "--version":
		if len(rest) > 0 && (rest[0] == "--help" || rest[0] == "-h") {
			fmt.Fprint(e.stdout, versionHelp)
			return 0
		}
		fmt.Fprintf(e.stdout, "tokperf %s (%s %s/%s)\n", Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
		if c := buildCommit(); c != "" {
			fmt.Fprintf(e.stdout, "commit %s\n", c)
		}
		return 0
	case "__flags":
		// The flag names of a command, for the completion scripts.
		if len(rest) == 1 && commandTable[rest[0]] != nil {
			e.listFlags = true
			return exitCode(rest[0], commandTable[rest[0]](ctx, rest[0], []string{"--help"}, e), e)
		}
		return exitUsage
	}
	if c := commandTable[cmd]; c != nil {
		err = c(ctx, cmd, rest, e)
	} else {
		err = usagef("unknown command %q%s", cmd, didYouMean(cmd))
	}
	if err != nil && ctx.Err() != nil && !errors.Is(err, errInterrupted) && !errors.Is(err, errCheckFailed) {
		// Stopped by a signal before a summary (during detection, a
		// dataset's read): whatever the error became on its way up.
		err = &stopped{err}
	}
	return exitCode(cmd, err, e)
}

// stopped is an error of a command a signal stopped before its summary:
// exit 130, said as interrupted.
type stopped struct{ err error }

func (s *stopped) Error() string { return "interrupted: " + oneLine(s.err) }
func (s *stopped) Unwrap() error { return s.err }

// didYouMean is ": did you mean X?" for the command nearest cmd, or the
// list of commands.
func didYouMean(cmd string) string {
	names := []string{"help", "version"}
	for n := range commandTable {
		names = append(names, n)
	}
	slices.Sort(names)
	if near := closest(cmd, names); near != "" {
		return ": did you mean " + near + "?"
	}
	return " (commands: " + strings.Join(names, ", ") + ")"
}

// exitCode says what happened, on stderr where it is an error.
func exitCode(cmd string, err error, e *env) int {
	var ue *usageError
	var ce *bench.ConfigError
	var fe *failedError
	var we *withheldError
	switch {
	case err == nil, errors.Is(err, errHelp), errors.Is(err, errParsed):
		return exitOK
	case errors.Is(err, errCheckFailed):
		return exitVerdictFail
	case errors.As(err, &we):
		fmt.Fprintf(e.stderr, "tokperf %s: %v\n", cmd, err)
		return exitWithheld
	case errors.Is(err, errInterrupted):
		fmt.Fprintln(e.stderr, "tokperf: interrupted; the summary above covers the requests that finished")
		return exitInterrupted
	case errors.As(err, new(*configsFailed)):
		fmt.Fprintf(e.stderr, "tokperf %s: %v\n", cmd, err)
		return exitSomeFailed
	case errors.As(err, new(*stopped)):
		fmt.Fprintf(e.stderr, "tokperf %s: %v\n", cmd, err)
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

// withheldError is a verdict withheld under --strict (exit 5).
type withheldError struct{ reasons []string }

func (e *withheldError) Error() string {
	return fmt.Sprintf("--strict: not judged (%d): %s", len(e.reasons), strings.Join(e.reasons, "; "))
}

// strictly is the --strict error for the verdicts withheld, nil when none
// is or strict is off.
func strictly(strict bool, withheld []string) error {
	if !strict || len(withheld) == 0 {
		return nil
	}
	return &withheldError{withheld}
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
	return fmt.Sprintf("%d of %s failed (%.1f%%, over --max-error-rate %g)", e.failed, record.Plural(e.total, "request"), 100*float64(e.failed)/float64(e.total), e.limit)
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

// versionHelp is tokperf help version: the command takes no flags.
const versionHelp = `Usage: tokperf version

The version of tokperf (a release's, or the module version Go stamped into the
build), the Go toolchain and the platform, then the commit it was built from.
It takes no flags.

Examples:
  tokperf version
`

const helpText = `tokperf measures how fast an LLM inference server really is.

Usage:
  tokperf sweep [flags]      one stage per concurrency level (default -c 1,4,16,32),
                             the headline table, warnings and a verdict on scaling
  tokperf run [flags]        one stage: closed loop (-c N) or open loop (--rate R)
  tokperf soak [flags]       one level for a long time (--duration, default 1h) in
                             slices of a minute: is it stable? trend, change points, leaks
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
  tokperf explain PEER FILE  why another tool's figures (vLLM, SGLang, GuideLLM, AIPerf,
                             inference-perf) differ from a tokperf run's of the same server
  tokperf baselines [NAME]   the published baselines tokperf knows
  tokperf trace stats FILE   a Mooncake-format trace's rate, lengths and prefix reuse
  tokperf fit FILE           fit the simulator to a sweep: a digital twin and its profile
  tokperf predict FILE -c N  the twin's figures at levels not run, with intervals;
                             --slo-ttft D: the highest level predicted to meet it
  tokperf selftest           how many streams tokperf measures accurately on this machine
                             (the simulator in its own process, ground truth compared)
  tokperf sim [flags]        run the embedded simulated server on its own
  tokperf config print       the effective configuration of a run, as a --config file
  tokperf k8s job|slurm      one benchmark as N shards on N nodes: a Kubernetes Indexed
                             Job or a Slurm array script (merge: tokperf report shard-*)
  tokperf completion SHELL   shell completion for bash, zsh or fish
  tokperf version            the version and the commit it was built from
  tokperf help COMMAND       the flags of a command, grouped, with examples

Every command that prints results takes --format text|json|csv|markdown|html|png.
With no --url, sweep and run start the embedded simulated server (profile
"seed", the seed article's 8-GPU deployment) and say so: the first run needs
no GPU. Every figure is defined in docs/METRICS.md.
`
