package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/tokperf/tokperf/internal/record"
)

// Format is a dataset file's format.
type Format string

// The dataset formats Reader reads.
const (
	// FormatShareGPT is a JSON array of {"conversations": [{"from", "value"}...]}
	// (or one such object a line): the first human turn is the prompt and
	// the reply that follows it gives the output length.
	FormatShareGPT Format = "sharegpt"
	// FormatPrompts is JSON Lines of {"prompt": "...", "max_tokens"|"output_tokens": N}.
	FormatPrompts Format = "prompts"
	// FormatChat is JSON Lines of OpenAI chat requests: {"messages": [...],
	// "tools": [...], "max_tokens"|"max_completion_tokens"|"output_tokens": N}.
	FormatChat Format = "chat"
)

// Formats lists the format names ParseFormat accepts.
var Formats = []Format{FormatShareGPT, FormatPrompts, FormatChat}

// ParseFormat reads a format name; "" and "auto" mean detect by content.
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case "", "auto":
		return "", nil
	case FormatShareGPT, FormatPrompts, FormatChat:
		return f, nil
	}
	return "", fmt.Errorf("dataset format %q: want auto, sharegpt, prompts or chat", s)
}

// MaxRecordBytes is the default cap on one record of a dataset (a JSON
// line, or one element of a ShareGPT array): a file can be gigabytes, but
// only one record at a time is held while reading.
const MaxRecordBytes = 16 << 20

// Item is one request read from a dataset.
type Item struct {
	// Prompt is the text to send; for chat items, Messages flattened.
	Prompt string
	// Messages and Tools are the chat request's, as the file had them.
	Messages []record.Message
	Tools    json.RawMessage
	// PromptTokens is the prompt's length, set by LoadDataset (counted by
	// its tokenizer, else estimated); Reader leaves it 0.
	PromptTokens int
	// OutputTokens is the output length the file asks for (max_tokens), or
	// for ShareGPT the reply's length once LoadDataset counted it; 0 when
	// the file gives none.
	OutputTokens int
	// Reply is the ShareGPT reply that follows the prompt: its length in
	// tokens is the item's output length. LoadDataset drops it once counted.
	Reply string
	// Line is where the record starts in the file (1-based).
	Line int
	// Turns is a ShareGPT record's whole conversation as chat messages
	// (human → user, gpt → assistant, system), read only for multi-turn
	// replay (Reader.Conversations).
	Turns []record.Message
}

// Reader reads a dataset one Item at a time, holding at most one record
// (MaxRecord bytes) and a read buffer in memory:
//
//	r := workload.NewReader(f, "data.jsonl", "")
//	for r.Next() {
//		it := r.Item()
//	}
//	err := r.Err()
//
// Each Item is new: the caller may keep it.
type Reader struct {
	// MaxRecord caps one record's size in bytes; 0 means MaxRecordBytes.
	// Set it before the first Next.
	MaxRecord int
	// Conversations keeps each ShareGPT record's whole conversation in
	// Item.Turns, for multi-turn replay.
	Conversations bool

	name    string
	format  Format
	br      *bufio.Reader
	started bool
	item    *Item
	err     error
	skipped map[string]int

	// JSON Lines
	sc   *bufio.Scanner
	line int
	// ShareGPT array
	dec *json.Decoder
	cr  *countReader
	n   int // elements read
}

// NewReader reads a dataset of format f from r; name is used in errors.
// An empty f detects the format from the content: a first non-space byte
// '[' is ShareGPT, otherwise the first line's keys decide ("conversations",
// "messages" or "prompt").
func NewReader(r io.Reader, name string, f Format) *Reader {
	return &Reader{name: name, format: f, br: bufio.NewReaderSize(r, 64<<10), skipped: map[string]int{}}
}

// Format is the dataset's format, known after the first Next.
func (r *Reader) Format() Format { return r.format }

// Item is the item the last Next read.
func (r *Reader) Item() *Item { return r.item }

// Err is the first error reading, nil at a clean end.
func (r *Reader) Err() error { return r.err }

// Skipped counts the records passed over, by reason ("no human turn
// followed by a reply").
func (r *Reader) Skipped() map[string]int { return r.skipped }

// errTooBig is a record over the cap.
var errTooBig = errors.New("record too large")

// Next reads the next usable item; it returns false at the end or on an
// error (see Err).
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	if !r.started {
		r.started = true
		if err := r.start(); err != nil {
			r.err = err
			return false
		}
	}
	for {
		it, err := r.next()
		if err != nil {
			if err != io.EOF {
				r.err = err
			}
			r.item = nil
			return false
		}
		if it != nil {
			r.item = it
			return true
		}
	}
}

func (r *Reader) maxRecord() int {
	if r.MaxRecord > 0 {
		return r.MaxRecord
	}
	return MaxRecordBytes
}

// start detects the format and sets up the record reader.
func (r *Reader) start() error {
	// Skip a byte-order mark and leading space.
	if b, _ := r.br.Peek(3); bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		r.br.Discard(3)
	}
	first := byte(0)
	for {
		b, err := r.br.ReadByte()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", r.name, err)
		}
		if b == '\n' {
			r.line++
		}
		if b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			first = b
			r.br.UnreadByte()
			break
		}
	}
	if r.format == "" {
		switch first {
		case 0:
			r.format = FormatPrompts // empty: nothing to read either way
		case '[':
			r.format = FormatShareGPT
		case '{':
			peek, _ := r.br.Peek(r.br.Size())
			if i := bytes.IndexByte(peek, '\n'); i >= 0 {
				peek = peek[:i]
			}
			switch keys := topKeys(peek); {
			case keys["conversations"]:
				r.format = FormatShareGPT
			case keys["messages"]:
				r.format = FormatChat
			case keys["prompt"]:
				r.format = FormatPrompts
			default:
				return fmt.Errorf("%s:%d: cannot tell the format: want a JSON array of ShareGPT conversations, or JSON lines with \"prompt\" or \"messages\"", r.name, r.line+1)
			}
		default:
			return fmt.Errorf("%s:%d: cannot tell the format: want a JSON array (ShareGPT) or JSON lines of objects", r.name, r.line+1)
		}
	}
	if first == '[' {
		if r.format != FormatShareGPT {
			return fmt.Errorf("%s:%d: a JSON array: want JSON lines for the %s format", r.name, r.line+1, r.format)
		}
		r.cr = &countReader{r: r.br, lines: r.line}
		r.dec = json.NewDecoder(r.cr)
		r.cr.limit = int64(r.maxRecord()) + 1<<16
		if _, err := r.dec.Token(); err != nil { // '['
			return fmt.Errorf("%s:%d: %w", r.name, r.line+1, err)
		}
		return nil
	}
	r.sc = bufio.NewScanner(r.br)
	r.sc.Buffer(make([]byte, 0, min(64<<10, r.maxRecord())), r.maxRecord())
	return nil
}

// topKeys returns the keys of the top-level object that b starts, as far
// as b goes.
func topKeys(b []byte) map[string]bool {
	keys := map[string]bool{}
	d := json.NewDecoder(bytes.NewReader(b))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return keys
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return keys
		}
		k, ok := t.(string)
		if !ok {
			return keys
		}
		keys[k] = true
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

// next reads one record: an item, nil for a skipped record, or an error
// (io.EOF at the end).
func (r *Reader) next() (*Item, error) {
	if r.dec != nil {
		return r.nextElement()
	}
	for {
		if !r.sc.Scan() {
			err := r.sc.Err()
			switch {
			case err == nil:
				return nil, io.EOF
			case errors.Is(err, bufio.ErrTooLong):
				return nil, fmt.Errorf("%s:%d: line longer than %d bytes, the cap on one record", r.name, r.line+1, r.maxRecord())
			}
			return nil, fmt.Errorf("reading %s: %w", r.name, err)
		}
		r.line++
		b := bytes.TrimSpace(r.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		obj, err := object(b, "")
		if err != nil {
			if rerr := r.sc.Err(); rerr != nil {
				// The read failed mid-line (its context done: Ctrl-C):
				// the Scanner hands over the part read; say why.
				return nil, fmt.Errorf("reading %s: %w", r.name, rerr)
			}
			return nil, fmt.Errorf("%s:%d: %w", r.name, r.line, err)
		}
		var it *Item
		switch r.format {
		case FormatShareGPT:
			it, err = r.shareGPT(obj)
		case FormatPrompts:
			it, err = prompt(obj)
		case FormatChat:
			it, err = chat(obj)
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", r.name, r.line, err)
		}
		if it != nil {
			it.Line = r.line
		}
		return it, nil
	}
}

func (r *Reader) nextElement() (*Item, error) {
	if !r.dec.More() {
		if _, err := r.dec.Token(); err != nil { // ']'
			if err == io.EOF {
				return nil, fmt.Errorf("%s:%d: the file ends inside the array", r.name, r.cr.lineAt(r.cr.off))
			}
			return nil, fmt.Errorf("%s:%d: %w", r.name, r.cr.lineAt(r.dec.InputOffset()), jsonErr(err))
		}
		if _, err := r.dec.Token(); err != io.EOF {
			return nil, fmt.Errorf("%s:%d: want the end of the file after the array", r.name, r.cr.lineAt(r.dec.InputOffset()))
		}
		return nil, io.EOF
	}
	at := r.dec.InputOffset()
	r.cr.limit = at + int64(r.maxRecord()) + 1<<16
	var raw json.RawMessage
	err := r.dec.Decode(&raw)
	if errors.Is(err, errTooBig) || len(raw) > r.maxRecord() {
		return nil, fmt.Errorf("%s:%d: element %d is larger than %d bytes, the cap on one record", r.name, r.cr.lineAt(at+1), r.n, r.maxRecord())
	}
	if err != nil {
		// Name the line of the fault: a syntax error's offset, or the end
		// of what was read.
		off := r.cr.off
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = se.Offset - 1
		}
		return nil, fmt.Errorf("%s:%d: %w", r.name, r.cr.lineAt(off), jsonErr(err))
	}
	start := r.dec.InputOffset() - int64(len(raw))
	line := r.cr.lineAt(start)
	r.n++
	obj, err := object(raw, "")
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", r.name, line, err)
	}
	it, err := r.shareGPT(obj)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: %w", r.name, line, err)
	}
	if it != nil {
		it.Line = line
	}
	return it, nil
}

// countReader counts the lines of what a json.Decoder reads, so an element
// can be named by its line, and stops a record that outgrows the cap.
type countReader struct {
	r     io.Reader
	off   int64   // bytes read
	limit int64   // reading past this offset fails with errTooBig
	lines int     // newlines before the first offset in nl
	nl    []int64 // offsets of newlines not yet passed by lineAt
}

func (c *countReader) Read(p []byte) (int, error) {
	if c.off >= c.limit {
		return 0, errTooBig
	}
	if room := c.limit - c.off; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.r.Read(p)
	for i, b := range p[:n] {
		if b == '\n' {
			c.nl = append(c.nl, c.off+int64(i))
		}
	}
	c.off += int64(n)
	return n, err
}

// lineAt is the 1-based line of offset off; offsets must not go backwards.
func (c *countReader) lineAt(off int64) int {
	k := 0
	for k < len(c.nl) && c.nl[k] < off {
		k++
	}
	c.lines += k
	c.nl = append(c.nl[:0], c.nl[k:]...)
	return c.lines + 1
}

// jsonErr shortens encoding/json's syntax errors.
func jsonErr(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) && se.Error() != "unexpected end of JSON input" {
		return fmt.Errorf("invalid JSON: %s", se.Error())
	}
	if se != nil || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("invalid JSON: the record ends early")
	}
	return err
}

// FieldError is a record whose field has the wrong type.
type FieldError struct {
	Field string // path inside the record: messages[2].role
	Want  string // "a string"
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %q: want %s", e.Field, e.Want) }

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// object decodes b as a JSON object; path names it in errors.
func object(b []byte, path string) (map[string]json.RawMessage, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		if path == "" {
			if !json.Valid(b) {
				return nil, errors.New("invalid JSON: want a JSON object")
			}
			return nil, errors.New("want a JSON object")
		}
		return nil, &FieldError{path, "an object"}
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, jsonErr(err)
	}
	return m, nil
}

func isNull(b json.RawMessage) bool { return b == nil || string(b) == "null" }

func str(b json.RawMessage, path string) (string, error) {
	var s string
	if len(b) == 0 || b[0] != '"' || json.Unmarshal(b, &s) != nil {
		return "", &FieldError{path, "a string"}
	}
	return s, nil
}

func array(b json.RawMessage, path string) ([]json.RawMessage, error) {
	var a []json.RawMessage
	if len(b) == 0 || b[0] != '[' || json.Unmarshal(b, &a) != nil {
		return nil, &FieldError{path, "an array"}
	}
	return a, nil
}

// outputTokens reads the first of keys that is set, as a whole number ≥ 0.
func outputTokens(obj map[string]json.RawMessage, keys ...string) (int, error) {
	for _, k := range keys {
		b := obj[k]
		if isNull(b) {
			continue
		}
		n, err := strconv.Atoi(string(b))
		if err != nil || n < 0 || n > MaxLength {
			return 0, &FieldError{k, fmt.Sprintf("a whole number from 0 to %d", MaxLength)}
		}
		return n, nil
	}
	return 0, nil
}

// The reasons a record is skipped.
const (
	skipNoReply     = "no human turn followed by a reply"
	skipEmptyPrompt = "empty prompt"
	skipEmptyReply  = "empty reply"
	skipPromptShort = "prompt under %d tokens"
	skipPromptLong  = "prompt over %d tokens"
	skipOutputShort = "output under %d tokens"
	skipOutputLong  = "output over %d tokens"
)

func (r *Reader) shareGPT(obj map[string]json.RawMessage) (*Item, error) {
	c := obj["conversations"]
	if isNull(c) {
		c = obj["conversation"]
	}
	if isNull(c) {
		r.skipped[skipNoReply]++
		return nil, nil
	}
	turns, err := array(c, "conversations")
	if err != nil {
		return nil, err
	}
	var ts []shareGPTTurn
	for i, t := range turns {
		p := index("conversations", i)
		o, err := object(t, p)
		if err != nil {
			return nil, err
		}
		from, err := str(o["from"], join(p, "from"))
		if err != nil {
			return nil, err
		}
		value, err := str(o["value"], join(p, "value"))
		if err != nil {
			return nil, err
		}
		ts = append(ts, shareGPTTurn{strings.ToLower(from), value})
	}
	for i, t := range ts {
		if t.from != "human" && t.from != "user" {
			continue
		}
		for _, u := range ts[i+1:] {
			switch u.from {
			case "system":
				continue
			case "gpt", "chatgpt", "assistant", "bing", "bard", "model":
				switch {
				case strings.TrimSpace(t.value) == "":
					r.skipped[skipEmptyPrompt]++
					return nil, nil
				case strings.TrimSpace(u.value) == "":
					r.skipped[skipEmptyReply]++
					return nil, nil
				}
				it := &Item{Prompt: t.value, Reply: u.value}
				if r.Conversations {
					// System turns before the first human one, then the
					// conversation from it.
					var before []shareGPTTurn
					for _, t := range ts[:i] {
						if t.from == "system" {
							before = append(before, t)
						}
					}
					it.Turns = shareGPTMessages(append(before, ts[i:]...))
				}
				return it, nil
			}
			break
		}
		break
	}
	r.skipped[skipNoReply]++
	return nil, nil
}

type shareGPTTurn struct{ from, value string }

// shareGPTMessages is a ShareGPT conversation as chat messages; turns of
// other speakers are left out.
func shareGPTMessages(ts []shareGPTTurn) []record.Message {
	var out []record.Message
	for _, t := range ts {
		switch t.from {
		case "human", "user":
			out = append(out, record.Message{Role: "user", Content: t.value})
		case "gpt", "chatgpt", "assistant", "bing", "bard", "model":
			out = append(out, record.Message{Role: "assistant", Content: t.value})
		case "system":
			out = append(out, record.Message{Role: "system", Content: t.value})
		}
	}
	return out
}

func prompt(obj map[string]json.RawMessage) (*Item, error) {
	p, err := str(obj["prompt"], "prompt")
	if err != nil {
		return nil, err
	}
	n, err := outputTokens(obj, "max_tokens", "output_tokens")
	if err != nil {
		return nil, err
	}
	return &Item{Prompt: p, OutputTokens: n}, nil
}

func chat(obj map[string]json.RawMessage) (*Item, error) {
	ms, err := array(obj["messages"], "messages")
	if err != nil {
		return nil, err
	}
	it := &Item{}
	for i, m := range ms {
		p := index("messages", i)
		o, err := object(m, p)
		if err != nil {
			return nil, err
		}
		role, err := str(o["role"], join(p, "role"))
		if err != nil {
			return nil, err
		}
		content, err := contentText(o["content"], join(p, "content"))
		if err != nil {
			return nil, err
		}
		it.Messages = append(it.Messages, record.Message{Role: role, Content: content, Raw: m})
	}
	if t := obj["tools"]; !isNull(t) {
		if _, err := array(t, "tools"); err != nil {
			return nil, err
		}
		it.Tools = t
	}
	if it.OutputTokens, err = outputTokens(obj, "max_tokens", "max_completion_tokens", "output_tokens"); err != nil {
		return nil, err
	}
	it.Prompt = Flatten(it.Messages)
	return it, nil
}

// contentText is a message's content as text: a string, null (an assistant
// turn that only calls tools), or an array of parts whose "text" parts are
// joined by newlines.
func contentText(b json.RawMessage, path string) (string, error) {
	if isNull(b) {
		return "", nil
	}
	if b[0] == '"' {
		return str(b, path)
	}
	parts, err := array(b, path)
	if err != nil {
		return "", &FieldError{path, "a string or an array of parts"}
	}
	var texts []string
	for i, pt := range parts {
		p := index(path, i)
		o, err := object(pt, p)
		if err != nil {
			return "", err
		}
		if t, ok := o["text"]; ok {
			s, err := str(t, join(p, "text"))
			if err != nil {
				return "", err
			}
			texts = append(texts, s)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// Flatten turns a conversation into one prompt for endpoints without
// messages: a single message is its content; several are a transcript.
// Tools are not carried over.
func Flatten(ms []record.Message) string {
	if len(ms) == 1 {
		return ms[0].Content
	}
	return transcript(ms, false)
}

// transcript is messages as "role: content" paragraphs separated by a
// blank line; with cue, a last user message is followed by "assistant:"
// for the answer to follow (a conversation's turn, even of one message).
func transcript(ms []record.Message, cue bool) string {
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(m.Role)
		b.WriteString(": ")
		b.WriteString(m.Content)
	}
	if cue && len(ms) > 0 && ms[len(ms)-1].Role == "user" {
		b.WriteString("\n\nassistant:")
	}
	return b.String()
}
