package results

import (
	"bytes"
	"fmt"
)

// StageStart is when a stage of one shard of a sharded run began its
// measured requests: PlannedUnixNs is the start all shards agreed on, on
// the server's clock (as each shard estimates it), and AtNs when this
// shard's gate opened, on the file's own clock.
type StageStart struct {
	Stage         int   `json:"stage"`
	PlannedUnixNs int64 `json:"planned_unix_ns"`
	AtNs          int64 `json:"at_ns"`
}

type stageLine struct {
	Type string `json:"type"` // "stage"
	StageStart
}

// WriteStage appends a stage's start and flushes it.
func (w *Writer) WriteStage(s StageStart) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.line(stageLine{Type: "stage", StageStart: s})
	}
	return w.err
}

// StageStarts are the stage starts read so far (a sharded run's).
func (r *Reader) StageStarts() []StageStart { return r.starts }

// Skipped counts the lines skipped because they were not JSON, in a file
// written to stdout and captured with other output (kubectl logs).
func (r *Reader) Skipped() int { return r.skipped }

// skipText says whether line b is another stream's text to skip: a line
// that does not start as JSON does in a file written to stdout (-o -).
// Before the header it cannot be known yet: the first such line is kept
// as the error to give unless the header says stdout.
func (r *Reader) skipText(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r")
	if len(b) > 0 && (b[0] == '{' || b[0] == '[') {
		return false // JSON, or its start: the reader's to judge
	}
	switch {
	case r.header == nil:
		if r.text == nil {
			r.text = fmt.Errorf("%s: not a tokperf result file: line %d is not JSON", r.name, r.lineNo)
		}
		r.skipped++
		return true
	case r.header.Stdout:
		r.skipped++
		return true
	}
	return false
}
