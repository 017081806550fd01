// Package results reads and writes tokperf result files: JSON Lines, a
// header line with the tool version, the setup and the machine, then one
// line per request, flushed as each request finishes, so a crash or an
// interrupt loses nothing that finished.
//
//	w, _ := results.Create("run.jsonl", header)
//	w.Write(rec)
//	w.Close(false) // false: not interrupted
//
//	r := results.NewReader(f, "run.jsonl")
//	for r.Next() { use(r.Record()) }
package results

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/tokperf/tokperf/internal/infile"
	"github.com/tokperf/tokperf/internal/record"
)

// Format names this file format and its version.
const Format = "tokperf-results/1"

// Header is the first line of a result file.
type Header struct {
	Type        string         `json:"type"` // "header"
	Format      string         `json:"format"`
	Tool        string         `json:"tool"`
	Version     string         `json:"version"`
	Created     time.Time      `json:"created"`
	StartUnixNs int64          `json:"start_unix_ns"` // wall time of offset 0
	Setup       record.Setup   `json:"setup"`
	Machine     record.Machine `json:"machine"`
	// Stdout says the file was written to standard output (-o -), where
	// other output may come between its lines (kubectl logs holds the
	// container's stderr too): a reader skips lines that are not JSON.
	Stdout bool `json:"stdout,omitempty"`
}

// metricsLine is a scrape of the server's /metrics during a stage.
type metricsLine struct {
	Type string `json:"type"` // "metrics"
	record.ServerSample
}

// WriteMetrics appends the server metrics sampled during a stage.
func (w *Writer) WriteMetrics(samples []record.ServerSample) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range samples {
		if w.err != nil {
			break
		}
		w.err = w.line(metricsLine{Type: "metrics", ServerSample: s})
	}
	return w.err
}

// gpuLine is one nvidia-smi reading taken during a stage.
type gpuLine struct {
	Type string `json:"type"` // "gpu"
	record.GPUSample
}

// WriteGPU appends the GPU readings taken during a stage.
func (w *Writer) WriteGPU(stage int, samples []record.GPUSample) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range samples {
		if w.err != nil {
			break
		}
		s.Stage = stage
		w.err = w.line(gpuLine{Type: "gpu", GPUSample: s})
	}
	return w.err
}

// sliceLine is one time slice of a stage, written as it ends.
type sliceLine struct {
	Type string `json:"type"` // "slice"
	record.Slice
}

// WriteSlice appends a finished time slice and flushes it.
func (w *Writer) WriteSlice(s record.Slice) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.line(sliceLine{Type: "slice", Slice: s})
	}
	return w.err
}

// hostLine is what the machine did over one stage (record.Host).
type hostLine struct {
	Type string `json:"type"` // "host"
	record.Host
}

// WriteHost appends a stage's host reading.
func (w *Writer) WriteHost(h record.Host) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.line(hostLine{Type: "host", Host: h})
	}
	return w.err
}

// End is the last line of a run that ended normally or by interrupt.
type End struct {
	Type        string `json:"type"` // "end"
	Interrupted bool   `json:"interrupted"`
	Requests    int    `json:"requests"`
}

// line is a request as stored: offsets in nanoseconds since the run's
// start, absent times omitted, chunks as [offset_ns, tokens] pairs.
type line struct {
	Type         string               `json:"type"` // "request"
	ID           int                  `json:"id"`
	Stage        int                  `json:"stage"`
	Concurrency  int                  `json:"concurrency"`
	Rate         float64              `json:"rate,omitempty"`
	Warmup       bool                 `json:"warmup,omitempty"`
	Conversation int                  `json:"conversation,omitempty"`
	Turn         int                  `json:"turn,omitempty"`
	Root         int                  `json:"root,omitempty"`
	ToolWaitNs   int64                `json:"tool_wait_ns,omitempty"`
	AgentWaitNs  int64                `json:"agent_wait_ns,omitempty"`
	Repeat       int                  `json:"repeat,omitempty"`
	Scheduled    int64                `json:"scheduled_ns"`
	Sent         int64                `json:"sent_ns"`
	FirstByte    *int64               `json:"first_byte_ns,omitempty"`
	FirstToken   *int64               `json:"first_token_ns,omitempty"`
	FirstContent *int64               `json:"first_content_ns,omitempty"`
	LastToken    *int64               `json:"last_token_ns,omitempty"`
	Done         int64                `json:"done_ns"`
	Chunks       chunks               `json:"chunks"`
	OutputTokens int                  `json:"output_tokens"`
	OutputSource string               `json:"output_source"`
	ChunkSource  string               `json:"chunk_source"`
	PromptTokens int                  `json:"prompt_tokens"`
	PromptSource string               `json:"prompt_source,omitempty"`
	AskedPrompt  int                  `json:"asked_prompt_tokens,omitempty"`
	AskedSource  string               `json:"asked_prompt_source,omitempty"`
	CachedTokens int                  `json:"cached_tokens,omitempty"`
	Reasoning    int                  `json:"reasoning_tokens,omitempty"`
	ReasonSource string               `json:"reasoning_source,omitempty"`
	ToolCalls    []record.ToolCall    `json:"tool_calls,omitempty"`
	ToolTokens   int                  `json:"tool_tokens,omitempty"`
	ToolSource   string               `json:"tool_source,omitempty"`
	Status       string               `json:"status"`
	HTTPCode     int                  `json:"http_code,omitempty"`
	Error        string               `json:"error,omitempty"`
	FinishReason string               `json:"finish_reason,omitempty"`
	Retries      int                  `json:"retries,omitempty"`
	RetryAfterNs int64                `json:"retry_after_ns,omitempty"`
	NoKeepAlive  bool                 `json:"no_keep_alive,omitempty"`
	BackoffNs    int64                `json:"backoff_ns,omitempty"`
	Buffered     int                  `json:"buffered_chunks,omitempty"`
	Coalesced    int                  `json:"coalesced_chunks,omitempty"`
	ConnectNs    int64                `json:"connect_ns,omitempty"`
	Endpoint     string               `json:"endpoint,omitempty"`
	Text         string               `json:"text,omitempty"`
	Server       *record.ServerTiming `json:"server,omitempty"`
}

// chunks are a request's [offset_ns, tokens] pairs, decoded by hand: a
// request may have a million, which reflection decodes slowly, and a
// hostile line more than MaxChunks, refused as soon as it has that many.
type chunks [][2]int64

// UnmarshalJSON reads [[offset, tokens], ...] of whole numbers, or null.
func (c *chunks) UnmarshalJSON(b []byte) error {
	i := 0
	space := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	want := func(ch byte) error {
		if space(); i >= len(b) || b[i] != ch {
			return fmt.Errorf("chunks: at byte %d: want %q", i, ch)
		}
		i++
		return nil
	}
	number := func() (int64, error) {
		space()
		start := i
		if i < len(b) && b[i] == '-' {
			i++
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		v, err := strconv.ParseInt(string(b[start:i]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("chunks: at byte %d: want a whole number of 64 bits", start)
		}
		return v, nil
	}
	if space(); bytes.Equal(b[i:], []byte("null")) {
		*c = nil
		return nil
	}
	if err := want('['); err != nil {
		return err
	}
	out := make(chunks, 0, min(bytes.Count(b, []byte("[")), MaxChunks+1))
	if space(); i < len(b) && b[i] == ']' {
		*c = out
		return nil
	}
	for {
		if len(out) == MaxChunks {
			return fmt.Errorf("chunks: more than the %d one request can have", MaxChunks)
		}
		if err := want('['); err != nil {
			return err
		}
		at, err := number()
		if err != nil {
			return err
		}
		if err := want(','); err != nil {
			return err
		}
		n, err := number()
		if err != nil {
			return err
		}
		if err := want(']'); err != nil {
			return err
		}
		out = append(out, [2]int64{at, n})
		if space(); i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if err := want(']'); err != nil {
			return err
		}
		*c = out
		return nil
	}
}

func opt(d time.Duration) *int64 {
	if d == record.Unset {
		return nil
	}
	v := int64(d)
	return &v
}

func unopt(p *int64) time.Duration {
	if p == nil {
		return record.Unset
	}
	return time.Duration(*p)
}

func toLine(r *record.Record) line {
	l := line{
		Type: "request", ID: r.ID, Stage: r.Stage, Concurrency: r.Concurrency, Rate: r.Rate, Warmup: r.Warmup, Conversation: r.Conversation, Turn: r.Turn, Repeat: r.Repeat,
		Root: r.Root, ToolWaitNs: int64(r.ToolWait), AgentWaitNs: int64(r.AgentWait),
		Scheduled: int64(r.Scheduled), Sent: int64(r.Sent), FirstByte: opt(r.FirstByte), FirstToken: opt(r.FirstToken),
		FirstContent: opt(r.FirstContent), LastToken: opt(r.LastToken), Done: int64(r.Done),
		Chunks: make([][2]int64, len(r.Chunks)), OutputTokens: r.OutputTokens, OutputSource: string(r.OutputSource),
		ChunkSource: string(r.ChunkSource), PromptTokens: r.PromptTokens, PromptSource: string(r.PromptSource),
		AskedPrompt: r.AskedPromptTokens, AskedSource: string(r.AskedPromptSource),
		CachedTokens: r.CachedTokens, Reasoning: r.ReasoningTokens, ReasonSource: string(r.ReasoningSource), Status: string(r.Status), HTTPCode: r.HTTPCode, Error: r.Error,
		FinishReason: r.FinishReason, Retries: r.Retries, Endpoint: r.Endpoint, Server: r.Server,
		Buffered: r.Buffered, Coalesced: r.Coalesced, ConnectNs: int64(r.Connect), Text: r.Text,
		RetryAfterNs: int64(r.RetryAfter), BackoffNs: int64(r.Backoff), NoKeepAlive: r.NoKeepAlive,
		ToolCalls: r.ToolCalls, ToolTokens: r.ToolTokens, ToolSource: string(r.ToolSource),
	}
	for i, c := range r.Chunks {
		l.Chunks[i] = [2]int64{int64(c.At), int64(c.Tokens)}
	}
	return l
}

func (l *line) record() record.Record {
	r := record.Record{
		ID: l.ID, Stage: l.Stage, Concurrency: l.Concurrency, Rate: l.Rate, Warmup: l.Warmup, Conversation: l.Conversation, Turn: l.Turn, Repeat: l.Repeat,
		Root: l.Root, ToolWait: time.Duration(l.ToolWaitNs), AgentWait: time.Duration(l.AgentWaitNs),
		Scheduled: time.Duration(l.Scheduled), Sent: time.Duration(l.Sent), FirstByte: unopt(l.FirstByte),
		FirstToken: unopt(l.FirstToken), FirstContent: unopt(l.FirstContent), LastToken: unopt(l.LastToken),
		Done: time.Duration(l.Done), OutputTokens: l.OutputTokens, OutputSource: record.TokenSource(l.OutputSource),
		ChunkSource: record.TokenSource(l.ChunkSource), PromptTokens: l.PromptTokens, PromptSource: record.TokenSource(l.PromptSource),
		AskedPromptTokens: l.AskedPrompt, AskedPromptSource: record.TokenSource(l.AskedSource),
		CachedTokens: l.CachedTokens, ReasoningTokens: l.Reasoning, ReasoningSource: record.TokenSource(l.ReasonSource), Status: record.Status(l.Status), HTTPCode: l.HTTPCode, Error: l.Error,
		FinishReason: l.FinishReason, Retries: l.Retries, Endpoint: l.Endpoint, Server: l.Server,
		Buffered: l.Buffered, Coalesced: l.Coalesced, Connect: time.Duration(l.ConnectNs), Text: l.Text,
		RetryAfter: time.Duration(l.RetryAfterNs), Backoff: time.Duration(l.BackoffNs), NoKeepAlive: l.NoKeepAlive,
		ToolCalls: l.ToolCalls, ToolTokens: l.ToolTokens, ToolSource: record.TokenSource(l.ToolSource),
	}
	if len(l.Chunks) > 0 {
		r.Chunks = make([]record.Chunk, len(l.Chunks))
		for i, c := range l.Chunks {
			r.Chunks[i] = record.Chunk{At: time.Duration(c[0]), Tokens: int(c[1])}
		}
	}
	return r
}

// Writer appends records to a result file; it is safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	f    io.Closer // nil: not ours to close (stdout)
	bw   *bufio.Writer
	n    int
	err  error
	Path string
}

// Create makes the file (and its directory) and writes the header.
func Create(path string, h Header) (*Writer, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating results directory: %w", err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("creating results file: %w", err)
	}
	return start(f, path, h)
}

// start writes the header to a file just opened.
func start(f *os.File, path string, h Header) (*Writer, error) {
	w := &Writer{f: f, bw: bufio.NewWriterSize(f, 64<<10), Path: path}
	h.Type, h.Format = "header", Format
	if err := w.line(h); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// CreateNew is Create for a path where nothing may be yet: it fails with
// an error matching fs.ErrExist, atomically, where a file is (two runs
// started in the same second must not share one).
func CreateNew(path string, h Header) (*Writer, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating results directory: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating results file: %w", err)
	}
	return start(f, path, h)
}

// NewWriter writes a result file to out, which it never closes (-o -:
// stdout), named name in errors; the header says so (Header.Stdout).
func NewWriter(out io.Writer, name string, h Header) (*Writer, error) {
	w := &Writer{bw: bufio.NewWriterSize(out, 64<<10), Path: name}
	h.Type, h.Format, h.Stdout = "header", Format, true
	if err := w.line(h); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Writer) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if _, err := w.bw.Write(b); err != nil {
		return fmt.Errorf("writing %s: %w", w.Path, err)
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("writing %s: %w", w.Path, err)
	}
	return nil
}

// Write appends one record and flushes it to the file.
func (w *Writer) Write(r record.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	l := toLine(&r)
	if err := l.check(); err != nil {
		// A line the reader would refuse would make the whole file
		// unreadable: the request is kept as failed, without the field.
		if l, err = refused(&r, err); err != nil {
			w.err = fmt.Errorf("request %d: %w", r.ID, err)
			return w.err
		}
	}
	w.err = w.line(&l)
	w.n++
	return w.err
}

// refused is the line of a record the reader would refuse: failed with
// the reason, its counts and chunks dropped; an error if even that is
// refused (its times are).
func refused(r *record.Record, why error) (line, error) {
	c := *r
	c.Status, c.Error = record.StatusBadCount, fmt.Sprintf("not storable as measured (%v); %s", why, r.Error)
	c.Chunks, c.OutputTokens, c.PromptTokens, c.CachedTokens, c.ReasoningTokens = nil, 0, 0, 0, 0
	c.OutputSource, c.ChunkSource, c.PromptSource, c.ReasoningSource = record.SourceNone, record.SourceNone, record.SourceNone, record.SourceNone
	c.FirstToken, c.FirstContent, c.LastToken = record.Unset, record.Unset, record.Unset
	l := toLine(&c)
	return l, l.check()
}

// Close writes the end line and closes the file.
func (w *Writer) Close(interrupted bool) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.line(End{Type: "end", Interrupted: interrupted, Requests: w.n})
	}
	if w.f != nil {
		if err := w.f.Close(); err != nil && w.err == nil {
			w.err = err
		}
	}
	return w.err
}

// Reader reads a result file with the Scanner shape. A last line cut short
// by a crash is skipped and reported by Truncated, not an error.
type Reader struct {
	sc         *bufio.Scanner
	name       string
	lineNo     int
	header     *Header
	headerLine int
	end        *End
	rec        record.Record
	err        error
	truncated  bool
	metrics    []record.ServerSample
	gpu        []record.GPUSample
	slices     []record.Slice
	hosts      []record.Host
	starts     []StageStart
	// skipped counts lines that are not JSON in a file written to
	// stdout; text is the first line before the header that is not
	// JSON, an error unless the header says stdout.
	skipped int
	text    error
	// seen are the request ids read (a file holds each once); dups
	// counts the lines skipped for repeating one.
	seen map[int]struct{}
	dups int
}

// The bounds of what a run writes, past which a line is refused: a file
// past them was corrupted or made by hand, and summing it would give
// absurd figures (a TTFT of 146 years from one first_token_ns of 2^62).
const (
	// MaxOffset bounds every time in a request line: a run of a year.
	MaxOffset = 366 * 24 * time.Hour
	// MaxStage bounds a stage index: far more levels than any sweep.
	MaxStage = 100_000
	// MaxChunks bounds one request's chunks: MaxLength tokens (2^20)
	// one to a chunk, and a few more that carry none.
	MaxChunks = 1<<20 + 1024
	// MaxClockOffset bounds a shard's clock offset from the server: a
	// machine a day out has no clock worth placing requests by.
	MaxClockOffset = 24 * time.Hour
)

// Slices are the time slices read so far.
func (r *Reader) Slices() []record.Slice { return r.slices }

// Hosts are the stages' host readings read so far (none in files written
// before they were taken).
func (r *Reader) Hosts() []record.Host { return r.hosts }

// GPU are the GPU readings read so far.
func (r *Reader) GPU() []record.GPUSample { return r.gpu }

// Metrics are the server metrics samples read so far.
func (r *Reader) Metrics() []record.ServerSample { return r.metrics }

// Duplicates is how many request lines were skipped for repeating the id
// of one read before (the first is kept): never summed twice.
func (r *Reader) Duplicates() int { return r.dups }

// NewReader reads from r; name is used in errors ("run.jsonl line 12: …").
func NewReader(r io.Reader, name string) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	return &Reader{sc: sc, name: name}
}

// Open opens a result file for reading; close the returned file. A named
// pipe is read as a stream; a device or a directory is refused.
func Open(path string) (*Reader, io.Closer, error) {
	return OpenContext(context.Background(), path)
}

// OpenContext is Open whose reads stop once ctx is done.
func OpenContext(ctx context.Context, path string) (*Reader, io.Closer, error) {
	f, err := infile.OpenStream(ctx, path, infile.Stream)
	if err != nil {
		return nil, nil, err
	}
	return NewReader(f, path), f, nil
}

var requestPrefix = []byte(`{"type":"request",`)

// chunkSep is between two chunks of a request line as written.
var chunkSep = []byte("],[")

// Next reads the next request record; false at the end or on error.
func (r *Reader) Next() bool {
	for r.err == nil && r.sc.Scan() {
		r.lineNo++
		b := r.sc.Bytes()
		if len(b) == 0 || r.skipText(b) {
			continue
		}
		switch r.readLine(b) {
		case stop:
			return false
		case given:
			return true
		}
	}
	r.finish()
	return false
}

// step is what one line leaves Next to do.
type step int

const (
	onward step = iota // read the next line
	stop               // the end of the file, or an error in r.err
	given              // a request record in r.rec
)

// readLine reads one line that is not blank.
func (r *Reader) readLine(b []byte) step {
	var kind struct {
		Type string `json:"type"`
	}
	// Request lines, nearly all of a file, are written type first: a
	// prefix says what they are without parsing them twice.
	if bytes.HasPrefix(b, requestPrefix) {
		kind.Type = "request"
	} else if err := json.Unmarshal(b, &kind); err != nil {
		r.badLine(b, err)
		return stop
	}
	switch {
	case r.header == nil && kind.Type == "request":
		r.err = fmt.Errorf("%s line %d: a request before the header: not a tokperf result file", r.name, r.lineNo)
		return stop
	case r.header == nil && kind.Type != "header":
		r.err = fmt.Errorf("%s line %d: not a tokperf result file: the first line is not a header", r.name, r.lineNo)
		return stop
	case kind.Type == "header":
		return r.readHeader(b)
	case kind.Type == "request":
		return r.readRequest(b)
	}
	return r.readOther(kind.Type, b)
}

// readHeader reads the header: one a file, of this format.
func (r *Reader) readHeader(b []byte) step {
	if r.header != nil {
		r.err = fmt.Errorf("%s line %d: a second header (the first is line %d): one file holds one run", r.name, r.lineNo, r.headerLine)
		return stop
	}
	var h Header
	if err := json.Unmarshal(b, &h); err != nil {
		r.err = fmt.Errorf("%s line %d: header: %v", r.name, r.lineNo, err)
		return stop
	}
	if sh := h.Setup.Shard; sh != nil {
		if off := sh.Clock.Offset(); off > MaxClockOffset || off < -MaxClockOffset {
			r.err = fmt.Errorf("%s line %d: header: setup.shard.clock.offset_ns %d: more than %v from the server's clock: not a clock to place requests by", r.name, r.lineNo, sh.Clock.OffsetNs, MaxClockOffset)
			return stop
		}
	}
	if h.Format != Format {
		r.err = fmt.Errorf("%s line %d: format %q, this tokperf reads %q", r.name, r.lineNo, h.Format, Format)
		return stop
	}
	if r.text != nil && !h.Stdout {
		r.err = r.text
		return stop
	}
	r.header, r.headerLine = &h, r.lineNo
	return onward
}

// readRequest reads a request line into r.rec; a line repeating the id of
// one before it is skipped.
func (r *Reader) readRequest(b []byte) step {
	// A line with more chunks than any request has is refused
	// before it is decoded, which would take seconds.
	if bytes.Count(b, chunkSep) > MaxChunks {
		r.err = fmt.Errorf("%s line %d: chunks: more than the %d one request can have", r.name, r.lineNo, MaxChunks)
		return stop
	}
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			r.badLine(b, err)
		} else {
			r.err = fmt.Errorf("%s line %d: %v", r.name, r.lineNo, err)
		}
		return stop
	}
	if err := l.check(); err != nil {
		r.err = fmt.Errorf("%s line %d: %w", r.name, r.lineNo, err)
		return stop
	}
	if r.seen == nil {
		r.seen = map[int]struct{}{}
	}
	if _, dup := r.seen[l.ID]; dup {
		r.dups++
		return onward
	}
	r.seen[l.ID] = struct{}{}
	r.rec = l.record()
	return given
}

// readOther reads a line of another type: a server, GPU or host reading, a
// slice, a stage's start, or the end.
func (r *Reader) readOther(kind string, b []byte) step {
	switch kind {
	case "metrics":
		var m metricsLine
		if err := json.Unmarshal(b, &m); err != nil {
			r.err = fmt.Errorf("%s line %d: metrics: %v", r.name, r.lineNo, err)
			return stop
		}
		r.metrics = append(r.metrics, m.ServerSample)
	case "gpu":
		var g gpuLine
		if err := json.Unmarshal(b, &g); err != nil {
			r.err = fmt.Errorf("%s line %d: gpu: %v", r.name, r.lineNo, err)
			return stop
		}
		r.gpu = append(r.gpu, g.GPUSample)
	case "slice":
		var sl sliceLine
		if err := json.Unmarshal(b, &sl); err != nil {
			r.err = fmt.Errorf("%s line %d: slice: %v", r.name, r.lineNo, err)
			return stop
		}
		if err := checkSlice(&sl.Slice); err != nil {
			r.err = fmt.Errorf("%s line %d: %w", r.name, r.lineNo, err)
			return stop
		}
		r.slices = append(r.slices, sl.Slice)
	case "host":
		var h hostLine
		if err := json.Unmarshal(b, &h); err != nil {
			r.err = fmt.Errorf("%s line %d: host: %v", r.name, r.lineNo, err)
			return stop
		}
		if h.Stage < 0 || h.To < h.From || h.CPURunS < 0 || h.CPUWaitS < 0 || h.PressureS < 0 || h.Retrans < 0 || h.Steal < 0 || h.Steal > 1 {
			r.err = fmt.Errorf("%s line %d: host: stage %d: a negative or inverted reading (from_ns %d, to_ns %d)", r.name, r.lineNo, h.Stage, h.From, h.To)
			return stop
		}
		r.hosts = append(r.hosts, h.Host)
	case "stage":
		var st stageLine
		if err := json.Unmarshal(b, &st); err != nil {
			r.err = fmt.Errorf("%s line %d: stage: %v", r.name, r.lineNo, err)
			return stop
		}
		if st.Stage < 0 || st.AtNs < 0 {
			r.err = fmt.Errorf("%s line %d: stage: stage %d, at_ns %d: negative", r.name, r.lineNo, st.Stage, st.AtNs)
			return stop
		}
		r.starts = append(r.starts, st.StageStart)
	case "end":
		var e End
		json.Unmarshal(b, &e)
		r.end = &e
	default:
		r.err = fmt.Errorf("%s line %d: unknown line type %q", r.name, r.lineNo, kind)
		return stop
	}
	return onward
}

// finish sets the error of a file that ended: a read that failed, text
// and no header, or nothing at all.
func (r *Reader) finish() {
	if r.err == nil {
		if err := r.sc.Err(); err != nil {
			r.err = fmt.Errorf("%s line %d: %w", r.name, r.lineNo+1, err)
		} else if r.header == nil && r.text != nil {
			r.err = r.text
		} else if r.header == nil && !r.truncated {
			r.err = fmt.Errorf("%s line 1: no header: the file is empty", r.name)
		}
	}
}

// check rejects what no run writes: negative counts and offsets, and
// chunks out of arrival order. The error names the field.
func (l *line) check() error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"scheduled_ns", l.Scheduled}, {"sent_ns", l.Sent}, {"done_ns", l.Done}, {"connect_ns", l.ConnectNs},
		{"retry_after_ns", l.RetryAfterNs}, {"backoff_ns", l.BackoffNs},
		{"output_tokens", int64(l.OutputTokens)}, {"prompt_tokens", int64(l.PromptTokens)}, {"cached_tokens", int64(l.CachedTokens)},
		{"reasoning_tokens", int64(l.Reasoning)}, {"conversation", int64(l.Conversation)}, {"turn", int64(l.Turn)}, {"repeat", int64(l.Repeat)},
		{"root", int64(l.Root)}, {"tool_wait_ns", l.ToolWaitNs}, {"agent_wait_ns", l.AgentWaitNs},
	} {
		if f.v < 0 {
			return fmt.Errorf("%s: %d is negative", f.name, f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    *int64
	}{
		{"first_byte_ns", l.FirstByte}, {"first_token_ns", l.FirstToken}, {"first_content_ns", l.FirstContent}, {"last_token_ns", l.LastToken},
	} {
		if f.v != nil && *f.v < 0 {
			return fmt.Errorf("%s: %d is negative", f.name, *f.v)
		}
	}
	for _, f := range []struct {
		name string
		v    *int64
	}{
		{"scheduled_ns", &l.Scheduled}, {"sent_ns", &l.Sent}, {"done_ns", &l.Done}, {"connect_ns", &l.ConnectNs},
		{"retry_after_ns", &l.RetryAfterNs}, {"backoff_ns", &l.BackoffNs}, {"tool_wait_ns", &l.ToolWaitNs}, {"agent_wait_ns", &l.AgentWaitNs},
		{"first_byte_ns", l.FirstByte}, {"first_token_ns", l.FirstToken}, {"first_content_ns", l.FirstContent}, {"last_token_ns", l.LastToken},
	} {
		if f.v != nil && *f.v > int64(MaxOffset) {
			return fmt.Errorf("%s: %d is more than a year into the run", f.name, *f.v)
		}
	}
	// The order every request's events happen in: sent, its first token,
	// its last, done. A line out of it would give negative or absurd
	// latencies.
	if l.FirstToken != nil && *l.FirstToken < l.Sent {
		return fmt.Errorf("sent_ns: %d is after first_token_ns %d: a request is sent before its first token", l.Sent, *l.FirstToken)
	}
	if l.FirstToken != nil && l.LastToken != nil && *l.LastToken < *l.FirstToken {
		return fmt.Errorf("last_token_ns: %d is before first_token_ns %d", *l.LastToken, *l.FirstToken)
	}
	if l.LastToken != nil && l.Done < *l.LastToken {
		return fmt.Errorf("done_ns: %d is before last_token_ns %d", l.Done, *l.LastToken)
	}
	if l.Stage < 0 || l.Stage > MaxStage {
		return fmt.Errorf("stage: %d is not a stage index (0 to %d)", l.Stage, MaxStage)
	}

	for i, c := range l.Chunks {
		switch {
		case c[0] < 0:
			return fmt.Errorf("chunks[%d]: offset %d is negative", i, c[0])
		case c[1] < 0:
			return fmt.Errorf("chunks[%d]: %d tokens is negative", i, c[1])
		case c[1] > math.MaxInt32:
			return fmt.Errorf("chunks[%d]: %d tokens is more than any chunk holds", i, c[1])
		case i > 0 && c[0] < l.Chunks[i-1][0]:
			return fmt.Errorf("chunks[%d]: offset %d is before the previous chunk's %d: chunks are stored in arrival order", i, c[0], l.Chunks[i-1][0])
		}
	}
	return nil
}

// checkSlice rejects a slice no run writes; the error names the field.
func checkSlice(s *record.Slice) error {
	switch {
	case s.Index < 0:
		return fmt.Errorf("slice: %d is negative", s.Index)
	case s.From < 0 || s.To < s.From:
		return fmt.Errorf("to_ns: %d is before from_ns %d", s.To, s.From)
	case s.Requests < 0 || s.OK < 0 || s.Errors < 0 || s.OutputTokens < 0 || s.OK+s.Errors > s.Requests:
		return fmt.Errorf("requests: %d with %d ok and %d errors", s.Requests, s.OK, s.Errors)
	}
	return nil
}

// badLine handles a line that is not a JSON object: only the last line may
// be cut short (a crash mid-write), and only to the start of one; anything
// else is an error. The first line cut short leaves no header, which is an
// error too; a first line that is not even the start of JSON is not a
// result file.
func (r *Reader) badLine(b []byte, err error) {
	bad := r.lineNo
	last := !r.sc.Scan() && r.sc.Err() == nil
	torn := jsonPrefix(b)
	switch {
	case r.header == nil && torn && last:
		r.truncated = true
		r.err = fmt.Errorf("%s line %d: no header: the file was cut before its first line was complete", r.name, bad)
	case r.header == nil && json.Valid(b):
		r.err = fmt.Errorf("%s: not a tokperf result file: line %d is not a header", r.name, bad)
	case r.header == nil:
		r.err = fmt.Errorf("%s: not a tokperf result file: line %d is not JSON", r.name, bad)
	case last && torn:
		r.truncated = true
	default:
		r.err = fmt.Errorf("%s line %d: %v", r.name, bad, err)
	}
}

// jsonPrefix reports whether b is the start of a JSON value cut short
// (what a crash mid-write leaves), not bytes that never were JSON.
func jsonPrefix(b []byte) bool {
	var v any
	err := json.NewDecoder(bytes.NewReader(b)).Decode(&v)
	return errors.Is(err, io.ErrUnexpectedEOF)
}

// Record is the current record.
func (r *Reader) Record() record.Record { return r.rec }

// Header is the file's header (nil before it is read).
func (r *Reader) Header() *Header { return r.header }

// End is the end line, nil when the run did not end cleanly.
func (r *Reader) End() *End { return r.end }

// Truncated reports a last line cut short (the writer crashed mid-line).
func (r *Reader) Truncated() bool { return r.truncated }

// Err is the first error.
func (r *Reader) Err() error { return r.err }

// ReadAll reads a whole file.
func ReadAll(path string) (*Header, []record.Record, *Reader, error) {
	r, f, err := Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	var recs []record.Record
	for r.Next() {
		recs = append(recs, r.Record())
	}
	return r.header, recs, r, r.Err()
}
