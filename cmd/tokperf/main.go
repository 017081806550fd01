// Command tokperf measures how fast an LLM inference server really is.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/tokperf/tokperf/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
