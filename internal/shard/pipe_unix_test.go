//go:build unix

package shard

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A named pipe given to report or compare is one run of its own: its
// header is not read here (that open waited for a writer for ever, deaf to
// Ctrl-C, and would have taken what the run's reader needs).
func TestGroupNamedPipe(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "run.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	done := make(chan [][]string, 1)
	go func() {
		g, err := Group(ctx, []string{fifo})
		if err != nil {
			t.Error(err)
		}
		done <- g
	}()
	select {
	case g := <-done:
		if len(g) != 1 || len(g[0]) != 1 || g[0][0] != fifo {
			t.Errorf("groups %v, want the pipe alone", g)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Group waits on a named pipe with no writer")
	}
}
