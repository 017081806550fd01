package backend

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tokperf/tokperf/internal/record"
)

func events(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	ev := NewEvents(r)
	for ev.Next() {
		out = append(out, string(ev.Data()))
	}
	if err := ev.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEvents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"LF", "data: a\n\ndata: b\n\n", []string{"a", "b"}},
		{"CRLF", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"a", "b"}},
		{"bare CR", "data: a\r\rdata: b\r\r", []string{"a", "b"}},
		{"no space after colon (TGI)", "data:{\"x\":1}\n\n", []string{`{"x":1}`}},
		{"comments and keep-alives", ": ping\n\ndata: a\n: mid\n\n", []string{"a"}},
		{"other fields ignored", "event: message\nid: 7\nretry: 10\ndata: a\n\n", []string{"a"}},
		{"multi-line data joins with LF", "data: a\ndata: b\n\n", []string{"a\nb"}},
		{"event open at end of stream", "data: a\n\ndata: b", []string{"a", "b"}},
		{"blank lines between events", "\n\n\ndata: a\n\n\n\n", []string{"a"}},
		{"field without colon", "data\n\n", []string{""}},
		{"mixed endings", "data: a\r\n\ndata: b\r\rdata: c\n\r\n", []string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, events(t, strings.NewReader(tc.in))); diff != "" {
				t.Errorf("whole input (-want +got):\n%s", diff)
			}
			// One byte per read splits every line ending, CRLF included.
			if diff := cmp.Diff(tc.want, events(t, iotest.OneByteReader(strings.NewReader(tc.in)))); diff != "" {
				t.Errorf("one byte at a time (-want +got):\n%s", diff)
			}
		})
	}
}

func readCapture(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join("..", "..", "testdata", "wire", name))
}

// An event that arrived with the one before it is flagged as buffered.
func TestEventsBuffered(t *testing.T) {
	t.Parallel()
	// Two reads: the first delivers two events, the second one.
	r := &chunkedReader{parts: []string{"data: a\n\ndata: b\n\n", "data: c\n\n"}}
	ev := NewEvents(r)
	var got []bool
	for ev.Next() {
		got = append(got, ev.Buffered())
	}
	if !cmp.Equal(got, []bool{false, true, false}) {
		t.Errorf("buffered %v, want [false true false]", got)
	}
}

// A token chunk that shares its read with the events after it is stamped
// with their arrival: it counts as buffered whatever follows it, a chunk,
// the usage event or [DONE], in every SSE protocol.
func TestLateChunkCountsWhateverFollows(t *testing.T) {
	t.Parallel()
	const (
		a, b   = `data: {"choices":[{"text":" a"}]}` + "\n\n", `data: {"choices":[{"text":" b"}]}` + "\n\n"
		fin    = `data: {"choices":[{"text":"","finish_reason":"length"}]}` + "\n\n"
		usage  = `data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}` + "\n\n"
		done   = "data: [DONE]\n\n"
		tgiA   = `data: {"token":{"text":" a"}}` + "\n\n"
		tgiB   = `data: {"token":{"text":" b"},"details":{"finish_reason":"length","generated_tokens":2}}` + "\n\n"
		llamaA = `data: {"content":" a","tokens":[1]}` + "\n\n"
		llamaB = `data: {"content":" b","tokens":[2]}` + "\n\n"
		llamaZ = `data: {"content":"","tokens":[],"stop":true,"stop_type":"limit","tokens_predicted":2}` + "\n\n"
		sgA    = `data: {"text":" a","meta_info":{"completion_tokens":1}}` + "\n\n"
		sgB    = `data: {"text":" a b","meta_info":{"completion_tokens":2,"finish_reason":{"type":"length"}}}` + "\n\n"
	)
	for _, tc := range []struct {
		name  string
		p     protocol
		reads []string // what each read of the body brings
		want  int
	}{
		{"each-event-its-own-read", &openAI{}, []string{a, b, fin, usage, done}, 0},
		{"chunk-with-usage-and-done", &openAI{}, []string{a, b + fin + usage + done}, 1},
		{"chunk-with-finish", &openAI{}, []string{a, b + fin, usage, done}, 1},
		{"last-chunk-alone", &openAI{}, []string{a, b, fin + usage + done}, 0},
		{"chunk-with-chunk", &openAI{}, []string{a + b, fin, usage, done}, 1},
		{"all-in-one-read", &openAI{}, []string{a + b + fin + usage + done}, 2},
		{"llamacpp-chunk-with-stop", llamaCpp{}, []string{llamaA, llamaB + llamaZ}, 1},
		{"tgi-last-alone", tgi{}, []string{tgiA, tgiB}, 0},
		{"tgi-chunk-with-last", tgi{}, []string{tgiA + tgiB}, 1},
		{"sglang-chunk-with-last", sglang{}, []string{sgA + sgB, done}, 1},
		// Bytes after a chunk that are no event of their own stamp it too.
		{"chunk-with-comment", &openAI{}, []string{a + ": keep-alive\n\n", b, fin, usage, done}, 1},
		{"chunk-with-half-an-event", &openAI{}, []string{a + b[:12], b[12:], fin, usage, done}, 1},
		{"chunk-with-half-a-blank-line", &openAI{}, []string{a[:len(a)-1], "\n", b, fin, usage, done}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.New(1)
			readStream(tc.p, &chunkedReader{parts: tc.reads}, record.NewClock(), &rec, nil)
			if rec.Status != record.StatusOK && rec.Status != "" {
				t.Fatalf("%s %s", rec.Status, rec.Error)
			}
			if rec.Buffered != tc.want || rec.Coalesced != 0 {
				t.Errorf("%d buffered, %d coalesced chunks; want %d buffered (reads %q)", rec.Buffered, rec.Coalesced, tc.want, tc.reads)
			}
		})
	}
}

type chunkedReader struct{ parts []string }

func (c *chunkedReader) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts = c.parts[1:]
	return n, nil
}

func capture(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "wire", name))
	if err != nil {
		t.Fatalf("capture not available: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Real servers' bytes, read by the client's parsers.
func TestRealCaptures(t *testing.T) {
	t.Parallel()
	type want struct {
		status       record.Status
		output       int
		source       record.TokenSource
		chunkSource  record.TokenSource
		chunks       int
		finish       string
		prompt       int
		firstContent bool
	}
	for _, tc := range []struct {
		file string
		chat bool
		want want
	}{
		{"ollama-chat.sse", true, want{record.StatusOK, 6, record.SourceChunks, record.SourceChunks, 6, "length", 0, true}},
		{"ollama-chat-usage.sse", true, want{record.StatusOK, 6, record.SourceUsage, record.SourceChunks, 6, "length", 29, true}},
		{"ollama-newengine-chat-usage.sse", true, want{record.StatusOK, 3, record.SourceUsage, record.SourceChunks, 3, "length", 29, true}},
		{"ollama-completions.sse", false, want{record.StatusOK, 6, record.SourceChunks, record.SourceChunks, 6, "length", 0, true}},
		// Every chunk carries an all-zero usage: not final, not continuous.
		{"ollama-completions-usage.sse", false, want{record.StatusOK, 6, record.SourceUsage, record.SourceChunks, 6, "length", 29, true}},
		// A role-only first chunk is not a token.
		{"llama-chat.sse", true, want{record.StatusOK, 6, record.SourceChunks, record.SourceChunks, 6, "length", 0, true}},
		{"llama-chat-usage.sse", true, want{record.StatusOK, 6, record.SourceUsage, record.SourceChunks, 6, "length", 29, true}},
		// Usage on the finishing chunk is the final count, not a chunk of six tokens.
		{"llama-completions-usage.sse", false, want{record.StatusOK, 6, record.SourceUsage, record.SourceChunks, 6, "length", 2, true}},
		{"llama-completions.sse", false, want{record.StatusOK, 6, record.SourceUsage, record.SourceChunks, 6, "length", 2, true}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			rec := record.New(0)
			readStream(&openAI{chat: tc.chat}, capture(t, tc.file), record.NewClock(), &rec, nil)
			got := want{rec.Status, rec.OutputTokens, rec.OutputSource, rec.ChunkSource, len(rec.Chunks), rec.FinishReason, rec.PromptTokens, rec.FirstContent != record.Unset}
			if got != tc.want {
				t.Errorf("got %+v\nwant %+v (error %q)", got, tc.want, rec.Error)
			}
		})
	}
	t.Run("llama-completions-midstream-error.sse", func(t *testing.T) {
		rec := record.New(0)
		readStream(&openAI{}, capture(t, "llama-completions-midstream-error.sse"), record.NewClock(), &rec, nil)
		if rec.Status != record.StatusStreamError || !strings.Contains(rec.Error, "does not match") || len(rec.Chunks) == 0 {
			t.Errorf("status %q error %q chunks %d: want a stream error after some chunks", rec.Status, rec.Error, len(rec.Chunks))
		}
	})
}

func TestOpenAIStreams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in   string
		chat       bool
		status     record.Status
		output     int
		source     record.TokenSource
		chunkSizes []int
		reasoning  bool
	}{
		{"continuous usage gives tokens per chunk", "data: {\"choices\":[{\"text\":\"a b c\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3}}\n\ndata: {\"choices\":[{\"text\":\" d\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4}}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n",
			false, record.StatusOK, 4, record.SourceUsage, []int{3, 1}, false},
		{"continuous without final usage chunk", "data: {\"choices\":[{\"text\":\"a\"}],\"usage\":{\"completion_tokens\":2}}\n\ndata: {\"choices\":[{\"text\":\"b\",\"finish_reason\":\"stop\"}],\"usage\":{\"completion_tokens\":5}}\n\ndata: [DONE]\n\n",
			false, record.StatusOK, 5, record.SourceContinuous, []int{2, 3}, false},
		{"vLLM role chunk with zero usage is no token", "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}],\"usage\":{\"completion_tokens\":0}}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":\"length\"}],\"usage\":{\"completion_tokens\":1}}\n\ndata: [DONE]\n\n",
			true, record.StatusOK, 1, record.SourceUsage, []int{1}, false},
		{"reasoning is a token but not content", "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
			true, record.StatusOK, 2, record.SourceChunks, []int{1, 1}, true},
		{"tool calls are tokens", "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
			true, record.StatusOK, 1, record.SourceChunks, []int{1}, false},
		{"error object in the stream", "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"object\":\"error\",\"message\":\"boom\"}\n\n",
			false, record.StatusStreamError, 0, "", []int{1}, false},
		{"bare string error", "data: {\"error\":\"overloaded\"}\n\n",
			false, record.StatusStreamError, 0, "", nil, false},
		{"malformed chunk", "data: {\"choices\": [{\"text\": \n\n",
			false, record.StatusStreamError, 0, "", nil, false},
		{"ends without finish or DONE", "data: {\"choices\":[{\"text\":\"a\"}]}\n\n",
			false, record.StatusIncomplete, 1, record.SourceChunks, []int{1}, false},
		{"usage null", "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}],\"usage\":null}\n\ndata: [DONE]\n\n",
			false, record.StatusOK, 1, record.SourceChunks, []int{1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.New(0)
			readStream(&openAI{chat: tc.chat}, strings.NewReader(tc.in), record.NewClock(), &rec, nil)
			if rec.Status != tc.status {
				t.Fatalf("status %q (%s), want %q", rec.Status, rec.Error, tc.status)
			}
			var sizes []int
			for _, c := range rec.Chunks {
				sizes = append(sizes, c.Tokens)
			}
			if diff := cmp.Diff(tc.chunkSizes, sizes); diff != "" {
				t.Errorf("chunk sizes (-want +got):\n%s", diff)
			}
			if tc.status == record.StatusOK {
				if rec.OutputTokens != tc.output || rec.OutputSource != tc.source {
					t.Errorf("output %d from %q, want %d from %q", rec.OutputTokens, rec.OutputSource, tc.output, tc.source)
				}
				if tc.reasoning && rec.FirstContent == rec.FirstToken {
					t.Errorf("first content %v equals first token %v with reasoning first", rec.FirstContent, rec.FirstToken)
				}
			}
		})
	}
}

func TestSGLangStream(t *testing.T) {
	t.Parallel()
	in := "data: {\"text\":\" a\",\"meta_info\":{\"finish_reason\":null,\"prompt_tokens\":7,\"completion_tokens\":1}}\n\n" +
		"data: {\"text\":\" a b c d\",\"meta_info\":{\"finish_reason\":null,\"prompt_tokens\":7,\"completion_tokens\":4}}\n\n" +
		"data: {\"text\":\" a b c d e\",\"meta_info\":{\"finish_reason\":{\"type\":\"length\",\"length\":5},\"prompt_tokens\":7,\"completion_tokens\":5,\"e2e_latency\":0.1}}\n\n" +
		"data: [DONE]\n\n"
	rec := record.New(0)
	readStream(sglang{}, strings.NewReader(in), record.NewClock(), &rec, nil)
	var sizes []int
	for _, c := range rec.Chunks {
		sizes = append(sizes, c.Tokens)
	}
	if rec.Status != record.StatusOK || rec.OutputTokens != 5 || rec.PromptTokens != 7 || rec.FinishReason != "length" || !cmp.Equal(sizes, []int{1, 3, 1}) {
		t.Errorf("got status %q output %d prompt %d finish %q chunks %v", rec.Status, rec.OutputTokens, rec.PromptTokens, rec.FinishReason, sizes)
	}
	rec = record.New(0)
	readStream(sglang{}, strings.NewReader("data: {\"error\":{\"message\":\"oom\"}}\n\n"), record.NewClock(), &rec, nil)
	if rec.Status != record.StatusStreamError {
		t.Errorf("error event: status %q", rec.Status)
	}
}

func seedCorpus(f *testing.F) {
	for _, s := range []string{"data: a\n\n", "data:{}\r\n\r\n", ": c\rdata: x\r\r", "data: [DONE]\n\n",
		"data: {\"choices\":[{\"text\":\"a\"}],\"usage\":{\"completion_tokens\":3}}\n\n"} {
		f.Add([]byte(s))
	}
	if files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "wire", "*.sse")); err == nil {
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b)
			}
		}
	}
}

// The events re-encoded as data lines parse back to the same events, and
// splitting the input anywhere changes nothing.
func FuzzEvents(f *testing.F) {
	seedCorpus(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := lineEnd(in), bytes.IndexAny(in, "\r\n"); got != want {
			t.Fatalf("lineEnd(%q) = %d, want %d", in, got, want)
		}
		whole := events(t, strings.NewReader(string(in)))
		bytewise := events(t, iotest.OneByteReader(strings.NewReader(string(in))))
		if !cmp.Equal(whole, bytewise) {
			t.Fatalf("whole %q, byte-wise %q", whole, bytewise)
		}
	})
}

func checkRecord(t *testing.T, rec *record.Record) {
	t.Helper()
	if rec.Status == "" {
		t.Fatal("no status")
	}
	sum := 0
	for i, c := range rec.Chunks {
		if c.Tokens <= 0 {
			t.Fatalf("chunk %d has %d tokens", i, c.Tokens)
		}
		sum += c.Tokens
	}
	if rec.OutputSource == record.SourceContinuous && rec.Status == record.StatusOK && sum != rec.OutputTokens {
		t.Fatalf("continuous counts: chunks sum to %d, output %d", sum, rec.OutputTokens)
	}
}

func FuzzOpenAIStream(f *testing.F) {
	seedCorpus(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, chat := range []bool{false, true} {
			rec := record.New(0)
			readStream(&openAI{chat: chat}, strings.NewReader(string(in)), record.NewClock(), &rec, nil)
			checkRecord(t, &rec)
		}
	})
}

func FuzzSGLangStream(f *testing.F) {
	seedCorpus(f)
	f.Add([]byte("data: {\"text\":\"a\",\"meta_info\":{\"completion_tokens\":2,\"finish_reason\":{\"type\":\"stop\"}}}\n\ndata: [DONE]\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		rec := record.New(0)
		readStream(sglang{}, strings.NewReader(string(in)), record.NewClock(), &rec, nil)
		checkRecord(t, &rec)
	})
}

func BenchmarkOpenAIStream(b *testing.B) {
	var sb strings.Builder
	for i := range 1000 {
		sb.WriteString(`data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":128,"completion_tokens":`)
		sb.WriteString(strconv.Itoa(i + 1))
		sb.WriteString(`,"total_tokens":1}}` + "\n\n")
	}
	sb.WriteString("data: [DONE]\n\n")
	in := sb.String()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		rec := record.New(0)
		rec.Chunks = make([]record.Chunk, 0, 1000)
		readStream(&openAI{}, strings.NewReader(in), record.NewClock(), &rec, nil)
	}
	b.ReportMetric(float64(b.N*1000)/b.Elapsed().Seconds(), "chunks/s")
}

// BenchmarkEvents is the SSE scanner alone over a 1000-event stream: its
// few allocations are per stream (the scanner's buffer), none per event.
func BenchmarkEvents(b *testing.B) {
	var sb strings.Builder
	for range 1000 {
		sb.WriteString(`data: {"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" word","finish_reason":null}]}` + "\n\n")
	}
	in := sb.String()
	r := strings.NewReader(in)
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(in)
		ev := NewEvents(r)
		n := 0
		for ev.Next() {
			n++
		}
		if n != 1000 {
			b.Fatal(n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/event")
}

// TestLongLineLinear: a line that comes one byte per read is searched for
// its end once, not from its start after every read (which made one
// 10 MB event take seconds). 400 KB searched again after each byte would
// take tens of billions of steps; once, under a second on any machine.
//
// Serial: real time: it bounds how long a slow reader takes.
func TestLongLineLinear(t *testing.T) {
	long := strings.Repeat("x", 400<<10)
	start := time.Now()
	ev := NewEvents(iotest.OneByteReader(strings.NewReader("data: " + long + "\n\ndata: b\n\n")))
	var got []int
	for ev.Next() {
		got = append(got, len(ev.Data()))
	}
	if ev.Err() != nil || len(got) != 2 || got[0] != len(long) || got[1] != 1 {
		t.Fatalf("events of %v bytes, error %v", got, ev.Err())
	}
	var rec record.Record
	readStream(ollama{}, iotest.OneByteReader(strings.NewReader(`{"response":"`+long+`","done":false}`+"\r\n"+`{"response":"b","done":true,"eval_count":2}`+"\n")), record.NewClock(), &rec, nil)
	if !rec.OK() || rec.OutputTokens != 2 {
		t.Fatalf("ollama: %s %s, %d tokens", rec.Status, rec.Error, rec.OutputTokens)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("two 400 KB lines read one byte at a time took %v", took)
	}
}

// heldBody is a body that counts its reads from the connection, as the
// lean client's does: each part came by a read of its own, or (held) was
// already in the body's buffer.
type heldBody struct {
	parts []string
	held  []bool
	reads int
}

func (h *heldBody) Read(p []byte) (int, error) {
	if len(h.parts) == 0 {
		return 0, io.EOF
	}
	if !h.held[0] {
		h.reads++
	}
	n := copy(p, h.parts[0])
	h.parts, h.held = h.parts[1:], h.held[1:]
	return n, nil
}

func (h *heldBody) Reads() int { return h.reads }

// A token chunk whose connection read brought half of the next event too
// is stamped with that half's arrival even when the body hands the half
// over on a later read, from its own buffer: buffered. A half that needed
// a read of its own leaves the chunk its own time.
func TestLateChunkHeldInTheBodysBuffer(t *testing.T) {
	t.Parallel()
	a, b := `data: {"choices":[{"text":" a"}]}`+"\n\n", `data: {"choices":[{"text":" b","finish_reason":"length"}]}`+"\n\n"
	for _, tc := range []struct {
		name string
		held []bool
		want int
	}{
		{"the half was held", []bool{false, true, false, false}, 1},
		{"each part its own read", []bool{false, false, false, false}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.New(1)
			body := &heldBody{parts: []string{a, b[:12], b[12:], "data: [DONE]\n\n"}, held: tc.held}
			readStream(&openAI{}, body, record.NewClock(), &rec, nil)
			if rec.Buffered != tc.want || rec.Coalesced != 0 {
				t.Errorf("%d buffered, %d coalesced; want %d buffered", rec.Buffered, rec.Coalesced, tc.want)
			}
		})
	}
}

// stamps is a connection's account of its latest read, as offsets from
// a clock's start: when its newest bytes arrived (by the kernel; without
// one, when the read returned), when the read began, and when the read
// before it ended (-1: none).
type stamps struct {
	clock                   record.Clock
	arrived, began, prevEnd time.Duration
	kernel                  bool
}

func (s stamps) arrivedAt() (time.Time, bool) { return s.clock.Start().Add(s.arrived), true }

func (s stamps) readWindow() (time.Time, time.Time, bool) {
	var prev time.Time
	if s.prevEnd >= 0 {
		prev = s.clock.Start().Add(s.prevEnd)
	}
	return s.clock.Start().Add(s.began), prev, s.kernel
}

// Events read together are the server's coalescing only when they came
// together: a read that was waiting when they arrived, or one after the
// client was away from reading for under a millisecond. A chunk that
// arrived 8 ms before the next and was read with it by a client away for
// those 8 ms is the client's lag, however soon after the later one's
// arrival the read came.
func TestPromptNeedsTheClientToHaveBeenReading(t *testing.T) {
	t.Parallel()
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	for _, tc := range []struct {
		name                          string
		arrived, began, prevEnd, read time.Duration
		kernel, want                  bool
	}{
		{"written together, the read waiting", ms(100), ms(95), ms(94.9), ms(100.05), true, true},
		{"8 ms late, read with the next", ms(108), ms(108.1), ms(99.9), ms(108.15), true, false},
		{"away half a millisecond", ms(100), ms(100.2), ms(99.7), ms(100.25), true, true},
		{"the first read of a connection, late", ms(100), ms(100.5), -1, ms(100.6), true, false},
		{"read long after the arrival", ms(100), ms(95), ms(94.9), ms(103), true, false},
		// Without a stamp the arrival is the read's return.
		{"no kernel stamp, the read waited", ms(100), ms(95), ms(94.9), ms(100.01), false, true},
		{"no kernel stamp, 8 ms away", ms(108.11), ms(108.1), ms(99.9), ms(108.12), false, false},
		{"no kernel stamp, never away", ms(108.11), ms(108.1), ms(108.09), ms(108.12), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := record.NewClock()
			a := &arrivals{clock: clock, conn: stamps{clock, tc.arrived, tc.began, tc.prevEnd, tc.kernel}, read: tc.read}
			if got := a.prompt(); got != tc.want {
				t.Errorf("prompt %v, want %v", got, tc.want)
			}
		})
	}
}
