package workload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A dataset read stops when its context is done (what SIGINT does): a
// named pipe whose writer has gone quiet, and a large regular file. Both
// used to be read to their end, the pipe forever.
func TestDatasetReadStops(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "prompts.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	// The writer: one line, then silence with the pipe held open.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.WriteString(`{"prompt": "hello there"}` + "\n")
	big := filepath.Join(dir, "big.jsonl")
	line := `{"prompt": "` + strings.Repeat("word ", 200) + `"}` + "\n"
	if err := os.WriteFile(big, []byte(strings.Repeat(line, 20000)), 0o600); err != nil { // 20 MB
		t.Fatal(err)
	}
	for _, c := range []struct{ name, path string }{{"named pipe", fifo}, {"large file", big}} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				_, err := NewContext(ctx, Options{Dataset: c.path, Format: FormatPrompts, Output: Fixed(8)})
				done <- err
			}()
			time.Sleep(20 * time.Millisecond) // mid-read for the large file, most likely; it stops either way
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "invalid JSON") {
					t.Fatalf("got %v, want the read stopped by the context, and said so", err)
				}
			case <-time.After(20 * time.Second): // wide for a busy machine; without the fix the pipe waits forever
				t.Fatal("the dataset read ignored its context")
			}
		})
	}
}
