// Package infile opens the files a user hands tokperf (datasets, result
// files, other tools' files, tokenizers, configs) so that none of them can
// hang or exhaust the process: what is not a regular file (a named pipe, a
// device such as /dev/zero, a directory) is refused before it is read (a
// named pipe is let through where a stream is read: OpenStream), a file
// over its kind's size cap is refused from its size alone, a read past the
// cap fails, and every open and read stops when the context is done.
//
//	f, err := infile.Open(ctx, path, infile.Tokenizer)
//	if err != nil {
//		return err // "tokenizer.json is a character device (/dev/zero?): want a regular file"
//	}
//	defer f.Close()
//	data, err := io.ReadAll(f) // fails past the cap, or once ctx is done
package infile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// The size caps, one per kind of file. Each is far above any real file of
// its kind and far below what would exhaust memory.
const (
	// Config caps a --config YAML or an experiment file.
	Config int64 = 4 << 20
	// Tokenizer caps a tokenizer.json: the largest vocabularies published
	// are tens of MB.
	Tokenizer int64 = 256 << 20
	// TokenizerConfig caps a tokenizer_config.json (a chat template or
	// two).
	TokenizerConfig int64 = 16 << 20
	// Whole caps a file read whole into memory to be decoded as one JSON
	// document: GuideLLM's and AIPerf's reports.
	Whole int64 = 1 << 30
	// Stream is the cap of a file read as a stream, record by record
	// (datasets, result files, traces): large, since memory does not grow
	// with it, but still bounded so a file that never ends is refused.
	Stream int64 = 64 << 30
	// Records caps a file whose every record is held in memory: a
	// trace, an eval file.
	Records int64 = 4 << 30
	// Small caps a key file, a list of lengths, a certificate.
	Small int64 = 16 << 20
)

// ErrTooLarge is what a read past a file's cap fails with.
var ErrTooLarge = errors.New("over the size cap")

// File is an open user file: a reader bounded by its cap that stops when
// its context is done.
type File struct {
	f     *os.File
	ctx   context.Context
	name  string
	limit int64
	n     int64
	size  int64
	stop  func() bool // ends the watch on ctx of a pipe
}

// Open opens path for reading with the size cap limit. It refuses what is
// not a regular file, naming what it is, without blocking: a named pipe is
// refused before it is opened, not waited on.
func Open(ctx context.Context, path string, limit int64) (*File, error) {
	return open(ctx, path, limit, false)
}

// OpenStream is Open for a file read as a stream, which may also be a
// named pipe (a shell's <(zcat data.gz), or mkfifo): opening it waits for
// its writer and reading it for data, each until ctx is done.
func OpenStream(ctx context.Context, path string, limit int64) (*File, error) {
	return open(ctx, path, limit, true)
}

func open(ctx context.Context, path string, limit int64, pipe bool) (*File, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	st, err := os.Stat(path)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok {
			pe.Op = "open" // as os.Open says it
		}
		return nil, err
	}
	isPipe := pipe && st.Mode()&fs.ModeNamedPipe != 0
	if err := regular(path, st); err != nil && !isPipe {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is %s, over the %s cap for this kind of file: %w", path, size(st.Size()), size(limit), ErrTooLarge)
	}
	var f *os.File
	if isPipe {
		f, err = openPipe(ctx, path)
	} else {
		// O_NONBLOCK: should path have become a pipe since Stat, opening
		// it does not wait for a writer (no effect on a regular file).
		f, err = os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	}
	if err != nil {
		return nil, err
	}
	if st, err = f.Stat(); err == nil && !isPipe {
		err = regular(path, st)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	file := &File{f: f, ctx: ctx, name: path, limit: limit, size: st.Size()}
	if isPipe {
		// The pipe is in the runtime's poller: a deadline in the past
		// wakes a read waiting on it.
		file.stop = context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	}
	return file, nil
}

// openPipe opens a named pipe, which waits for its writer (a shell's
// mkfifo with the writer started after tokperf), until ctx is done. An
// open abandoned so stays waiting on its goroutine, and closes the pipe
// should a writer come.
func openPipe(ctx context.Context, path string) (*os.File, error) {
	type opened struct {
		f   *os.File
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		ch <- opened{f, err}
	}()
	select {
	case o := <-ch:
		return o.f, o.err
	case <-ctx.Done():
		go func() {
			if o := <-ch; o.f != nil {
				o.f.Close()
			}
		}()
		return nil, fmt.Errorf("opening %s: %w", path, ctx.Err())
	}
}

// regular says, when st is not a regular file, what it is instead.
func regular(path string, st fs.FileInfo) error {
	m := st.Mode()
	var what string
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeCharDevice != 0:
		what = "a character device"
	case m&fs.ModeDevice != 0:
		what = "a device"
	default:
		what = "not a regular file"
	}
	return fmt.Errorf("%s is %s: want a regular file", path, what)
}

// Read reads up to len(p) bytes; it fails with ErrTooLarge once the file
// has given more than its cap (it grew while read), and with the
// context's error once that is done.
func (f *File) Read(p []byte) (int, error) {
	if err := f.ctx.Err(); err != nil {
		return 0, err // the caller names the file
	}
	if f.n >= f.limit {
		var one [1]byte
		if n, _ := f.f.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%s is over the %s cap for this kind of file: %w", f.name, size(f.limit), ErrTooLarge)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > f.limit-f.n {
		p = p[:f.limit-f.n]
	}
	n, err := f.f.Read(p)
	f.n += int64(n)
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) && f.ctx.Err() != nil {
		err = f.ctx.Err()
	}
	return n, err
}

// ReadAt reads len(p) bytes from off, for a file read at random places
// (a corpus); off+len(p) past the cap is an error.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off+int64(len(p)) > f.limit {
		return 0, fmt.Errorf("%s is over the %s cap for this kind of file: %w", f.name, size(f.limit), ErrTooLarge)
	}
	return f.f.ReadAt(p, off)
}

// Size is the file's size when opened.
func (f *File) Size() int64 { return f.size }

// Name is the path the file was opened by.
func (f *File) Name() string { return f.name }

// Close closes the file.
func (f *File) Close() error {
	if f.stop != nil {
		f.stop()
	}
	return f.f.Close()
}

// ReadAll reads the whole file at path, refused as Open refuses and
// bounded by limit.
func ReadAll(ctx context.Context, path string, limit int64) ([]byte, error) {
	f, err := Open(ctx, path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, 0, f.size+512)
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// size writes n in the largest binary unit it fills.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
