package infile

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A link to /dev/zero, a directory and a named pipe are refused at once,
// each named, and a file over its cap is refused from its size.
func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	zero := filepath.Join(dir, "tokenizer.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Skip(err)
	}
	fifo := filepath.Join(dir, "config.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, 2048), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path, want string
	}{
		{"device", zero, "is a character device: want a regular file"},
		{"directory", dir, "is a directory"},
		{"named pipe", fifo, "is a named pipe"},
		{"over the cap", big, "is 2.0 KiB, over the 1.0 KiB cap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := ReadAll(context.Background(), c.path, 1024); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
					t.Fatalf("got %v, want an error naming %s that says %q", err, c.path, c.want)
				}
			case <-time.After(10 * time.Second): // wide: the machine may be busy; a hang is minutes
				t.Fatal("ReadAll hung")
			}
		})
	}
}

// A file that grows past its cap while read fails with ErrTooLarge; one
// exactly at its cap reads whole.
func TestReadCap(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "f")
	os.WriteFile(path, bytes.Repeat([]byte("x"), 100), 0o600)
	f, err := Open(context.Background(), path, 100)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), 200), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(f); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a file grown past its cap: got %v, want ErrTooLarge", err)
	}
	os.WriteFile(path, bytes.Repeat([]byte("x"), 100), 0o600)
	if data, err := ReadAll(context.Background(), path, 100); err != nil || len(data) != 100 {
		t.Fatalf("at the cap: got %d bytes, %v", len(data), err)
	}
}

// A read stops once the context is done: from a regular file at the next
// read, and from a pipe with no writer while it waits.
func TestReadStopsWithContext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "data.jsonl")
	os.WriteFile(path, make([]byte, 1<<20), 0o600)
	ctx, cancel := context.WithCancel(context.Background())
	f, err := Open(ctx, path, Stream)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	if _, err := f.Read(buf); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := f.Read(buf); !errors.Is(err, context.Canceled) {
		t.Fatalf("regular file after cancel: got %v, want context.Canceled", err)
	}

	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	// A writer that holds the pipe open and writes nothing, as a slow
	// producer does.
	w, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx, cancel = context.WithCancel(context.Background())
	p, err := OpenStream(ctx, fifo, Stream)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	done := make(chan error, 1)
	go func() { _, err := p.Read(buf); done <- err }()
	time.Sleep(50 * time.Millisecond) // let the read start waiting; it is woken either way
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("pipe after cancel: got %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second): // wide: a busy machine; without the fix it waits forever
		t.Fatal("a read from a pipe ignored the cancelled context")
	}
}

// A named pipe read as a stream waits for a writer that comes late (a
// shell's mkfifo, then the writer), and stops waiting when the context is
// done.
func TestOpenStreamPipe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "data.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		w.WriteString("late but whole\n")
		w.Close()
	}()
	f, err := OpenStream(context.Background(), fifo, Stream)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil || string(data) != "late but whole\n" {
		t.Fatalf("read %q, %v", data, err)
	}

	lonely := filepath.Join(dir, "lonely")
	if err := syscall.Mkfifo(lonely, 0o600); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := OpenStream(ctx, lonely, Stream); done <- err }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v, want the open stopped by the context", err)
		}
	case <-time.After(10 * time.Second): // wide for a busy machine; the bug waits forever
		t.Fatal("opening a pipe with no writer ignored the context")
	}
	// Let the abandoned open end.
	if w, err := os.OpenFile(lonely, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
}
