//go:build unix

package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// report and compare of a named pipe nobody writes wait, and Ctrl-C ends
// the wait: exit 130, "interrupted" (they hung for ever, deaf to it).
func TestReportPipeInterrupted(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "run.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	for _, args := range [][]string{{"report", fifo}, {"compare", fifo, fifo}} {
		t.Run(args[0], func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(200*time.Millisecond, cancel)
			var out, errw bytes.Buffer
			done := make(chan int, 1)
			go func() { done <- Run(ctx, args, strings.NewReader(""), &out, &errw) }()
			select {
			case code := <-done:
				if code != exitInterrupted || !strings.Contains(errw.String(), "interrupted") {
					t.Errorf("exit %d, stderr %q; want %d and interrupted", code, errw.String(), exitInterrupted)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("still waiting on the pipe 10 s after the interrupt")
			}
		})
	}
}
