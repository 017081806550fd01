package backend

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// framing is how a protocol's stream is cut into events, and the
// Content-Types a server marks it with. Each protocol declares its own
// (protocol.framing): the response's Content-Type is checked against it
// and the stream is read with it, so a new framing is a new value here,
// not a case in the reading code.
type framing struct {
	name string // what a message says is wanted: "text/event-stream"
	// types are the media types read as this framing, lower case; a
	// response without a Content-Type is given the benefit of the doubt.
	types []string
	// done is the data of the event that ends a stream after the engine's
	// own last one ("[DONE]"); empty where there is none.
	done string
	open func(io.Reader) frames
}

// The framings the engines use.
var (
	sse = framing{name: "text/event-stream", types: []string{"text/event-stream"}, done: "[DONE]",
		open: func(r io.Reader) frames { return NewEvents(r) }}
	// ndjson is one JSON object a line (Ollama); a whole JSON answer is
	// one line of it.
	ndjson = framing{name: "application/x-ndjson", types: []string{"application/x-ndjson", "application/json"},
		open: newJSONLines}
)

// accepts reports whether a response's Content-Type is this framing's.
func (f framing) accepts(ctype string) bool {
	mt, _, _ := strings.Cut(ctype, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	if mt == "" {
		return true
	}
	for _, t := range f.types {
		if mt == t {
			return true
		}
	}
	return false
}

// frames are a stream's events in one framing, with the Scanner shape of
// Events: Data is valid until the next call to Next.
type frames interface {
	Next() bool
	Data() []byte
	Err() error
	// Shared is Events.Shared: whether the event before the current one
	// shared the read that completed it with bytes after it. False where
	// the framing cannot tell.
	Shared() bool
}

// stream is one response being read event by event in its protocol's
// framing. Next times each event by its arrival, keeps the count of
// chunks stamped late (lag) and stops at the framing's done event; chunk
// records a token-carrying event. Every protocol's read is a loop over
// it, keeping only what its events mean:
//
//	for s.Next() {
//		var e event
//		if !s.decode(&e) {
//			return false
//		}
//		s.chunk(tokens, hasText)
//		if e.Last {
//			s.last()
//			return true
//		}
//	}
//	return false
//
// readStream then sets the record's final status from what read returned
// (whether the stream reached its finish) and the framing's read error.
type stream struct {
	ev    frames
	clock stamper
	rec   *record.Record
	// text, when non-nil, is where the protocol keeps the output text (for
	// correctness checks, not on the measuring hot path).
	text *strings.Builder
	done string
	late lag
	now  time.Duration // the current event's arrival
	// why, when set, is the likely reason a stream ended without its
	// finish, added to the record's error (Ollama's repeat limit).
	why string
	// body is the stamped body, held here so that a response costs one
	// allocation for both.
	body readStamper
}

// Next advances to the next event; false at the end of the stream, on a
// read error, or at the framing's done event (whose arrival is the
// record's Done).
func (s *stream) Next() bool {
	if !s.ev.Next() {
		return false
	}
	s.now = s.clock.Now()
	s.late.next(s.ev.Shared(), s.rec)
	if s.done != "" && string(s.ev.Data()) == s.done {
		s.rec.Done = s.now
		return false
	}
	return true
}

// Data is the current event's data, valid until the next call to Next.
func (s *stream) Data() []byte { return s.ev.Data() }

// decode unmarshals the current event into v, or marks the record failed
// on bad JSON.
func (s *stream) decode(v any) bool { return decode(s.ev.Data(), v, s.rec) }

// fail marks the record failed by an error the server sent in the stream.
func (s *stream) fail(msg string) {
	s.rec.Status, s.rec.Error = record.StatusStreamError, "server error in stream: "+msg
}

// chunk records that the current event carried n tokens (n > 0), and
// whether any of them is content, not reasoning or a tool call's: the
// first such is the record's FirstContent.
func (s *stream) chunk(n int, content bool) {
	s.rec.AddChunk(s.now, n)
	s.late.chunk(s.clock)
	if content && s.rec.FirstContent == record.Unset {
		s.rec.FirstContent = s.now
	}
}

// last marks the current event as the engine's final one: its arrival is
// the record's Done, and nothing the server sends after it is the
// request's time.
func (s *stream) last() { s.rec.Done = s.now }

// readStream reads body into rec in p's framing: the loop over events is
// the stream's, what each event means is p's read. It is the one way a
// response's stream is read.
func readStream(p protocol, body io.Reader, clock stamper, rec *record.Record, text *strings.Builder) {
	s := &stream{clock: clock, rec: rec, text: text}
	s.read(p, body)
}

func (s *stream) read(p protocol, body io.Reader) {
	f := p.framing()
	s.ev, s.done = f.open(body), f.done
	finished := p.read(s)
	finish(s.rec, finished, s.ev.Err())
	if s.why != "" && s.rec.Status == record.StatusIncomplete {
		s.rec.Error += " (" + s.why + ")"
	}
}

// decode unmarshals one event, or marks the record failed on bad JSON.
func decode(data []byte, v any, rec *record.Record) bool {
	if err := json.Unmarshal(data, v); err != nil {
		rec.Status, rec.Error = record.StatusStreamError, fmt.Sprintf("malformed chunk: %v: %.80q", err, data)
		return false
	}
	return true
}

// jsonLines reads NDJSON: one event a line, blank lines skipped.
type jsonLines struct{ sc *bufio.Scanner }

func newJSONLines(r io.Reader) frames {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<10), maxEvent)
	sc.Split((&lines{}).split)
	return &jsonLines{sc}
}

func (j *jsonLines) Next() bool {
	for j.sc.Scan() {
		if len(bytes.TrimSpace(j.sc.Bytes())) > 0 {
			return true
		}
	}
	return false
}

func (j *jsonLines) Data() []byte { return j.sc.Bytes() }
func (j *jsonLines) Err() error   { return tooLong(j.sc.Err()) }

// Shared is false: a line's read is not followed (the lean client's
// arrival stamps still time each line).
func (j *jsonLines) Shared() bool { return false }

// lines splits like bufio.ScanLines, but a long line that comes in many
// reads is searched once, not from its start after every read.
type lines struct{ searched int }

func (l *lines) split(data []byte, atEOF bool) (int, []byte, error) {
	from := min(l.searched, len(data))
	if i := bytes.IndexByte(data[from:], '\n'); i >= 0 {
		i += from
		l.searched = 0
		return i + 1, bytes.TrimSuffix(data[:i], []byte{'\r'}), nil
	}
	if atEOF {
		l.searched = 0
		if len(data) > 0 {
			return len(data), bytes.TrimSuffix(data, []byte{'\r'}), nil
		}
		return 0, nil, nil
	}
	l.searched = len(data)
	return 0, nil, nil
}
