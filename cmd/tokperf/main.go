// Command tokperf measures how fast an LLM inference server really is.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/tokperf/tokperf/internal/cli"
	"github.com/tokperf/tokperf/internal/experiment"
)

// main ends the servers it started on every way out: a return, SIGINT,
// SIGTERM, SIGHUP (a closed terminal), a panic (Reap); the kernel's
// parent-death signal ends them on the others (kill -9). A closed pipe on
// stdout or stderr is noticed, not fatal: the writes fail and the output
// ends there, while the measurement goes on to its result file's end.
func main() {
	experiment.Adopt()
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer func() {
		if r := recover(); r != nil {
			experiment.Reap()
			panic(r)
		}
	}()
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	experiment.Reap()
	os.Exit(code)
}
