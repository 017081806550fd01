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
	// cur is the current event's data; rest holds the data lines of the
	// same event still to come, where each line was a JSON value of its
	// own (see Next).
	cur, rest []byte
	// events counts the events read, and first keeps the start of the
	// first one, to say what a stream that never finished was made of.
	events int
	first  [80]byte
	firstN int
	// bytes sums the events' data; max is the max tokens asked (0:
	// unknown), to tell counts no server could have produced.
	bytes, max int
}

// Next advances to the next event; false at the end of the stream, on a
// read error, or at the framing's done event (whose arrival is the
// record's Done).
//
// SSE joins an event's data lines with LF, which is one JSON value when a
// server splits an object over lines; some servers instead write two
// whole values in one event (an error object and then [DONE]). When the
// joined data is not one JSON value, each line is read as an event of
// its own, with the event's arrival.
func (s *stream) Next() bool {
	for len(s.rest) > 0 {
		line, rest, _ := bytes.Cut(s.rest, []byte{'\n'})
		s.rest = rest
		if len(bytes.TrimSpace(line)) > 0 {
			return s.take(line)
		}
	}
	if !s.ev.Next() {
		return false
	}
	s.now = s.clock.Now()
	s.late.next(s.ev.Shared(), s.rec)
	data := s.ev.Data()
	if i := bytes.IndexByte(data, '\n'); i >= 0 && !json.Valid(data) {
		data, s.rest = data[:i], data[i+1:]
	}
	return s.take(data)
}

// take makes data the current event; false at the framing's done event.
func (s *stream) take(data []byte) bool {
	s.cur = data
	if s.done != "" && string(data) == s.done {
		s.rec.Done = s.now
		return false
	}
	s.bytes += len(data)
	if s.events++; s.events == 1 {
		s.firstN = copy(s.first[:], data) // no allocation per request
	}
	return true
}

// Data is the current event's data, valid until the next call to Next.
func (s *stream) Data() []byte { return s.cur }

// decode unmarshals the current event into v, or marks the record failed
// on bad JSON.
func (s *stream) decode(v any) bool { return decode(s.cur, v, s.rec) }

// fail marks the record failed by an error the server sent in the stream.
func (s *stream) fail(msg string) {
	s.rec.Status, s.rec.Error = record.StatusStreamError, "server error in stream: "+msg
}

// chunk records that the current event carried n tokens (n > 0), and
// whether any of them is output the turn is answered with (content or a
// tool call's, not reasoning): the first such is the record's
// FirstContent.
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
	if why := s.implausible(); why != "" {
		s.badCount(why)
		return
	}
	if s.rec.Status != record.StatusIncomplete {
		return
	}
	if s.why != "" {
		s.rec.Error += " (" + s.why + ")"
	}
	// A connection cut mid-answer and a server that speaks another
	// protocol both end without the finish: say which it looked like.
	switch {
	case s.events == 0:
		s.rec.Error += ": no event at all"
	case len(s.rec.Chunks) == 0:
		s.rec.Error += fmt.Sprintf(": %d events, none with this route's tokens or finish (first: %q)", s.events, s.first[:s.firstN])
	}
}

// MaxCount bounds any token count a server can state for one request: a
// prompt of 16M tokens is past every model's context.
const MaxCount = 1 << 24

// implausible says what in the record's counts no server could have
// produced, "" when nothing: a count past MaxCount, more output than the
// max tokens asked (reasoning aside: some servers let it run past), or
// more visible tokens than bytes of events to carry them.
func (s *stream) implausible() string {
	r := s.rec
	out := max(r.OutputTokens, r.ChunkTokens())
	switch {
	case max(out, r.PromptTokens, r.CachedTokens, r.ReasoningTokens) > MaxCount:
		return fmt.Sprintf("the server stated %d output, %d prompt, %d cached tokens: more than any request holds (%d)", out, r.PromptTokens, r.CachedTokens, MaxCount)
	case s.max > 0 && out-r.ReasoningTokens > s.max:
		return fmt.Sprintf("the server stated %d output tokens for max tokens %d (finish reason %q)", out, s.max, r.FinishReason)
	case out-r.ReasoningTokens > s.bytes:
		return fmt.Sprintf("the server stated %d output tokens in %d bytes of events: fewer bytes than tokens", out, s.bytes)
	}
	return ""
}

// badCount marks the record as counted impossibly: its error keeps what
// the server said; its chunks are counted one token each and its output
// by them, so nothing absurd reaches a figure or the result file.
func (s *stream) badCount(why string) {
	r := s.rec
	if r.Status != record.StatusOK && r.Error != "" {
		why += "; " + r.Error
	}
	r.Status, r.Error = record.StatusBadCount, why
	for i := range r.Chunks {
		r.Chunks[i].Tokens = 1
	}
	r.OutputTokens, r.OutputSource = len(r.Chunks), record.SourceChunks
	r.ChunkSource = record.SourceChunks
	if r.PromptTokens > MaxCount || r.CachedTokens > r.PromptTokens {
		r.PromptTokens, r.PromptSource, r.CachedTokens = 0, record.SourceNone, 0
	}
	r.ReasoningTokens, r.ReasoningSource = min(r.ReasoningTokens, r.OutputTokens), record.SourceNone
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
