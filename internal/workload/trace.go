package workload

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/tokperf/tokperf/internal/infile"
)

// DefaultBlockSize is the tokens of one prefix block of a Mooncake trace.
const DefaultBlockSize = 512

// TraceRequest is one line of a Mooncake-format trace: when it is sent, its
// lengths, and the hash of each of its prompt's blocks (a block's hash
// stands for the block and every block before it, so two requests that
// share a hash share that prefix).
type TraceRequest struct {
	Line   int           // the line of the file it came from
	At     time.Duration // the timestamp, since the trace's first
	Input  int           // input_length, tokens
	Output int           // output_length, tokens
	Hashes []int64       // hash_ids, one a block of the prompt
}

// Trace is a Mooncake-format trace, its requests in time order.
type Trace struct {
	Name     string
	Requests []TraceRequest
}

// MaxTraceHashes caps a line's hash_ids (a million blocks of 512 tokens is
// far beyond any context).
const MaxTraceHashes = MaxLength

// LoadTrace reads the trace file path.
func LoadTrace(path string) (*Trace, error) {
	f, err := infile.Open(context.Background(), path, infile.Records)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	defer f.Close()
	return ReadTrace(f, path)
}

// ReadTrace reads a Mooncake-format trace: JSON Lines of
//
//	{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48]}
//
// timestamp in milliseconds (a number from 0 up, never going back),
// input_length and output_length whole numbers from 1 to MaxLength,
// hash_ids whole numbers from 0 (it may be absent: no block is shared).
// Other fields are ignored, blank lines skipped. The first error names
// the file, the line and the field. Offsets are from the first timestamp.
func ReadTrace(r io.Reader, name string) (*Trace, error) {
	t := &Trace{Name: name}
	br := bufio.NewReaderSize(r, 64<<10)
	var first, prev float64
	for line := 1; ; line++ {
		b, err := readLine(br, MaxRecordBytes)
		if errors.Is(err, errLineTooLong) {
			return nil, fmt.Errorf("%s:%d: line longer than %d bytes, the cap on one record", name, line, MaxRecordBytes)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
		if b = bytes.TrimSpace(b); len(b) > 0 {
			req, ms, ferr := traceLine(b)
			if ferr != nil {
				return nil, fmt.Errorf("%s:%d: %w", name, line, ferr)
			}
			if len(t.Requests) == 0 {
				first, prev = ms, ms
			}
			if ms < prev {
				return nil, fmt.Errorf("%s:%d: field \"timestamp\": %s is before the line before's %s (a trace is in time order)", name, line, fmtMs(ms), fmtMs(prev))
			}
			prev = ms
			req.Line, req.At = line, time.Duration((ms-first)*float64(time.Millisecond))
			t.Requests = append(t.Requests, req)
		}
		if err != nil {
			break
		}
	}
	if len(t.Requests) == 0 {
		return nil, fmt.Errorf("%s: no requests (want JSON lines with timestamp, input_length, output_length, hash_ids)", name)
	}
	return t, nil
}

func fmtMs(ms float64) string { return strconv.FormatFloat(ms, 'g', -1, 64) }

var errLineTooLong = errors.New("line too long")

// readLine reads one line without its newline, at most limit bytes.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var out []byte
	for {
		chunk, err := br.ReadSlice('\n')
		out = append(out, chunk...)
		if len(out) > limit+1 {
			return nil, errLineTooLong
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSuffix(out, []byte("\n")), err
	}
}

// traceLine decodes one line: the request and its timestamp in ms.
func traceLine(b []byte) (TraceRequest, float64, error) {
	var req TraceRequest
	obj, err := object(b, "")
	if err != nil {
		return req, 0, err
	}
	raw, ok := obj["timestamp"]
	if !ok || isNull(raw) {
		return req, 0, errors.New(`field "timestamp": missing (want milliseconds)`)
	}
	var ms float64
	if json.Unmarshal(raw, &ms) != nil || ms < 0 || math.IsInf(ms, 0) || ms > float64(math.MaxInt64/int64(time.Millisecond)) {
		return req, 0, &FieldError{"timestamp", "a number of milliseconds from 0 up"}
	}
	if req.Input, err = traceLength(obj, "input_length"); err != nil {
		return req, 0, err
	}
	if req.Output, err = traceLength(obj, "output_length"); err != nil {
		return req, 0, err
	}
	if raw, ok := obj["hash_ids"]; ok && !isNull(raw) {
		items, err := array(raw, "hash_ids")
		if err != nil {
			return req, 0, err
		}
		if len(items) > MaxTraceHashes {
			return req, 0, fmt.Errorf("field \"hash_ids\": %d blocks, more than %d", len(items), MaxTraceHashes)
		}
		req.Hashes = make([]int64, len(items))
		for i, it := range items {
			h, err := strconv.ParseInt(string(it), 10, 64)
			if err != nil || h < 0 {
				return req, 0, &FieldError{index("hash_ids", i), "a whole number from 0"}
			}
			req.Hashes[i] = h
		}
	}
	return req, ms, nil
}

func traceLength(obj map[string]json.RawMessage, key string) (int, error) {
	raw, ok := obj[key]
	if !ok || isNull(raw) {
		return 0, fmt.Errorf("field %q: missing (want tokens)", key)
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil || n < 1 || n > MaxLength {
		return 0, &FieldError{key, fmt.Sprintf("a whole number from 1 to %d", MaxLength)}
	}
	return n, nil
}

// Check says whether every request's blocks fit its prompt at block
// tokens a block: hash_ids may cover less than input_length (the rest is
// the request's own) but not more.
func (t *Trace) Check(block int) error {
	if block < 1 || block > MaxLength {
		return fmt.Errorf("block size %d: want 1 to %d tokens", block, MaxLength)
	}
	for _, r := range t.Requests {
		if need := blocks(r.Input, block); len(r.Hashes) > need {
			return fmt.Errorf("%s:%d: field \"hash_ids\": %d blocks of %d tokens, more than input_length %d needs (%d): is the block size %d?", t.Name, r.Line, len(r.Hashes), block, r.Input, need, block)
		}
	}
	return nil
}

// blocks is how many blocks of size tokens cover n.
func blocks(n, size int) int { return (n + size - 1) / size }

// Arrivals are the requests' send offsets at speedup times the trace's
// pace (speedup 2 sends in half the time).
func (t *Trace) Arrivals(speedup float64) []time.Duration {
	out := make([]time.Duration, len(t.Requests))
	for i, r := range t.Requests {
		out[i] = time.Duration(float64(r.At) / speedup)
	}
	return out
}

// TraceStats is what a trace asks for: how fast, how long, how much of its
// prompts a prefix cache could serve.
type TraceStats struct {
	Requests int
	Span     time.Duration // first timestamp to last
	Rate     float64       // requests/s over the span; 0 for one request
	// GapCV is the coefficient of variation (standard deviation / mean)
	// of the gaps between timestamps: 1 for Poisson arrivals, 0 for
	// constant ones, above 1 for bursts; 0 with fewer than two gaps.
	GapCV     float64
	BlockSize int
	// Input and Output are the length distributions, in tokens.
	Input, Output LengthStats
	// Blocks counts the prompts' blocks; Seen those whose hash came
	// earlier in the trace; Prefix those that came earlier as part of the
	// same prefix (every block before it seen too, in an earlier request's
	// leading blocks), which is what a prefix cache can serve.
	Blocks, Seen, Prefix int
	// InputTokens sums input_length; PrefixTokens the tokens of the
	// prefix blocks, as cut by input_length: their share is the hit rate
	// of a prefix cache that forgets nothing, in tokens.
	InputTokens, PrefixTokens int64
}

// LengthStats is a length distribution in brief.
type LengthStats struct {
	Mean               float64
	Min, P50, P90, Max int
}

// Reuse is the share of blocks seen before (Seen / Blocks).
func (s TraceStats) Reuse() float64 { return ratio(int64(s.Seen), int64(s.Blocks)) }

// PrefixReuse is the share of blocks a prefix cache can serve (Prefix / Blocks).
func (s TraceStats) PrefixReuse() float64 { return ratio(int64(s.Prefix), int64(s.Blocks)) }

// TokenReuse is the share of input tokens in prefix blocks: a prefix
// cache's token hit rate, were it unbounded.
func (s TraceStats) TokenReuse() float64 { return ratio(s.PrefixTokens, s.InputTokens) }

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Stats computes the trace's statistics at block tokens a block.
func (t *Trace) Stats(block int) TraceStats {
	s := TraceStats{Requests: len(t.Requests), BlockSize: block}
	if n := len(t.Requests); n > 0 {
		s.Span = t.Requests[n-1].At - t.Requests[0].At
		if n > 1 && s.Span > 0 {
			s.Rate = float64(n-1) / s.Span.Seconds()
		}
		s.GapCV = gapCV(t.Requests)
	}
	seen := map[int64]bool{}
	// chains[k] holds the hashes seen at block k of some request with every
	// block before it seen in the same request: a prefix a cache holds.
	type link struct {
		parent int64 // the block before's hash, -1 for the first
		h      int64
	}
	prefixes := map[link]bool{}
	in, out := make([]int, 0, len(t.Requests)), make([]int, 0, len(t.Requests))
	for _, r := range t.Requests {
		in, out = append(in, r.Input), append(out, r.Output)
		s.InputTokens += int64(r.Input)
		s.Blocks += len(r.Hashes)
		cached := true
		parent := int64(-1)
		for k, h := range r.Hashes {
			if seen[h] {
				s.Seen++
			}
			seen[h] = true
			l := link{parent, h}
			if cached && prefixes[l] {
				s.Prefix++
				s.PrefixTokens += int64(min(block, r.Input-k*block))
			} else {
				cached = false
			}
			prefixes[l] = true
			parent = h
		}
	}
	s.Input, s.Output = lengthStats(in), lengthStats(out)
	return s
}

// gapCV is the coefficient of variation of the gaps between requests.
func gapCV(rs []TraceRequest) float64 {
	if len(rs) < 3 {
		return 0
	}
	var sum, sq float64
	for i := 1; i < len(rs); i++ {
		g := float64(rs[i].At - rs[i-1].At)
		sum += g
		sq += g * g
	}
	n := float64(len(rs) - 1)
	mean := sum / n
	if mean == 0 {
		return 0
	}
	return math.Sqrt(max(sq/n-mean*mean, 0)) / mean
}

func lengthStats(v []int) LengthStats {
	if len(v) == 0 {
		return LengthStats{}
	}
	slices.Sort(v)
	sum := 0.0
	for _, x := range v {
		sum += float64(x)
	}
	at := func(q float64) int { return v[min(len(v)-1, int(q*float64(len(v))))] }
	return LengthStats{Mean: sum / float64(len(v)), Min: v[0], P50: at(0.5), P90: at(0.9), Max: v[len(v)-1]}
}
