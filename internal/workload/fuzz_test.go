package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// addFiles seeds f with testdata files.
func addFiles(f *testing.F, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile("testdata/" + n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// readItems reads data in format with a small record cap, so a fuzzed
// input cannot take much memory.
func readItems(data []byte, format Format) ([]Item, error) {
	r := NewReader(bytes.NewReader(data), "fuzz", format)
	r.MaxRecord = 64 << 10
	var items []Item
	for r.Next() {
		items = append(items, *r.Item())
		if len(items) > 10000 {
			panic("more items than the input could hold")
		}
	}
	return items, r.Err()
}

// mustJSON encodes v as one line, without escaping <, > and & (which
// would change the bytes of a raw message).
func mustJSON(v any) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func FuzzShareGPT(f *testing.F) {
	addFiles(f, "sharegpt.json", "sharegpt.jsonl")
	f.Add([]byte(`[{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"}]}]`))
	f.Add([]byte(`[{"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": 1}]}]`))
	f.Add([]byte("[\n{\"conversations\": null}, 3]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		items, err := readItems(data, FormatShareGPT)
		if err != nil {
			return
		}
		// What parsed writes back and parses to the same.
		var b strings.Builder
		b.WriteString("[\n")
		for i, it := range items {
			if i > 0 {
				b.WriteString(",\n")
			}
			b.WriteString(`{"conversations": [{"from": "human", "value": ` + mustJSON(it.Prompt) + `}, {"from": "gpt", "value": ` + mustJSON(it.Reply) + `}]}`)
		}
		b.WriteString("\n]\n")
		again, err := readItems([]byte(b.String()), "")
		if err != nil {
			t.Fatalf("re-reading what parsed: %v", err)
		}
		if len(again) != len(items) {
			t.Fatalf("%d items, %d on re-reading", len(items), len(again))
		}
		for i := range items {
			if again[i].Prompt != items[i].Prompt || again[i].Reply != items[i].Reply || again[i].Line != i+2 {
				t.Fatalf("item %d differs on re-reading: %+v, then %+v", i, items[i], again[i])
			}
		}
	})
}

func FuzzPromptsJSONL(f *testing.F) {
	addFiles(f, "prompts.jsonl")
	f.Add([]byte(`{"prompt": "a", "max_tokens": 3}` + "\n" + `{"prompt": "b", "output_tokens": "x"}`))
	f.Add([]byte("\ufeff{\"prompt\": \"\\u00e9\"}\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		items, err := readItems(data, FormatPrompts)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, it := range items {
			if it.OutputTokens > 0 {
				fmt.Fprintf(&b, "{\"prompt\": %s, \"max_tokens\": %d}\n", mustJSON(it.Prompt), it.OutputTokens)
			} else {
				fmt.Fprintf(&b, "{\"prompt\": %s}\n", mustJSON(it.Prompt))
			}
		}
		again, err := readItems([]byte(b.String()), "")
		if err != nil && len(items) > 0 {
			t.Fatalf("re-reading what parsed: %v", err)
		}
		if len(again) != len(items) {
			t.Fatalf("%d items, %d on re-reading", len(items), len(again))
		}
		for i := range items {
			if again[i].Prompt != items[i].Prompt || again[i].OutputTokens != items[i].OutputTokens || again[i].Line != i+1 {
				t.Fatalf("item %d differs on re-reading: %+v, then %+v", i, items[i], again[i])
			}
		}
	})
}

func compact(b []byte) string {
	var out bytes.Buffer
	if len(b) == 0 {
		return ""
	}
	if err := json.Compact(&out, b); err != nil {
		panic(err)
	}
	return out.String()
}

func FuzzChatJSONL(f *testing.F) {
	addFiles(f, "chat.jsonl")
	f.Add([]byte(`{"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}, {"text": "b"}]}], "max_tokens": 0}`))
	f.Add([]byte(`{"messages": [{"role": 1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		items, err := readItems(data, FormatChat)
		if err != nil {
			return
		}
		var b strings.Builder
		for _, it := range items {
			raws := make([]json.RawMessage, len(it.Messages))
			for k, m := range it.Messages {
				raws[k] = m.Raw
			}
			line := map[string]any{"messages": raws}
			if it.Tools != nil {
				line["tools"] = it.Tools
			}
			if it.OutputTokens > 0 {
				line["max_tokens"] = it.OutputTokens
			}
			b.WriteString(mustJSON(line) + "\n")
		}
		again, err := readItems([]byte(b.String()), FormatChat)
		if err != nil {
			t.Fatalf("re-reading what parsed: %v\n%s", err, b.String())
		}
		if len(again) != len(items) {
			t.Fatalf("%d items, %d on re-reading", len(items), len(again))
		}
		for i, it := range items {
			a := again[i]
			if a.Prompt != it.Prompt || a.OutputTokens != it.OutputTokens || compact(a.Tools) != compact(it.Tools) || len(a.Messages) != len(it.Messages) {
				t.Fatalf("item %d differs on re-reading: %+v, then %+v", i, it, a)
			}
			for k, m := range it.Messages {
				if m.Role != a.Messages[k].Role || m.Content != a.Messages[k].Content || compact(m.Raw) != compact(a.Messages[k].Raw) {
					t.Fatalf("item %d message %d differs on re-reading", i, k)
				}
			}
		}
	})
}

func FuzzParseLengths(f *testing.F) {
	for _, s := range []string{"512", "512:lognormal:0.6", "512:normal:64", "100-2000", "uniform:1:9", "0", "1-", "-", ":", "5:normal:1e308", "1048576:lognormal:4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		if strings.HasPrefix(strings.TrimSpace(spec), "@") {
			return // files are FuzzLengthsFile's
		}
		l, err := ParseLengths(spec)
		if err != nil {
			if !strings.HasPrefix(err.Error(), strconv.Quote(spec)+": ") {
				t.Fatalf("error %q does not quote the spec", err)
			}
			return
		}
		again, err := ParseLengths(l.String())
		if err != nil || again.String() != l.String() {
			t.Fatalf("%q parsed to %q, which parses to %q, %v", spec, l, again, err)
		}
		for i := range 20 {
			if v := l.At(int64(i), i); v < 1 || v > MaxLength || v != again.At(int64(i), i) {
				t.Fatalf("%q: sample %d = %d", spec, i, v)
			}
		}
	})
}

func FuzzLengthsFile(f *testing.F) {
	addFiles(f, "lengths.txt", "lengths-bad.txt")
	f.Add([]byte("1\r\n2\n# x\n\n3"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ReadLengths(bytes.NewReader(data), "f.txt")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.txt") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		var b strings.Builder
		for _, x := range v {
			if x < 1 || x > MaxLength {
				t.Fatalf("length %d out of range", x)
			}
			fmt.Fprintln(&b, x)
		}
		again, err := ReadLengths(strings.NewReader(b.String()), "f.txt")
		if err != nil || fmt.Sprint(again) != fmt.Sprint(v) {
			t.Fatalf("re-reading %v gave %v, %v", v, again, err)
		}
	})
}

// FuzzTrace: any input reads as a trace that holds what its lines said
// (offsets from 0 upwards in order, lengths in range) and builds prompts of
// its lengths, or is an error naming the file.
func FuzzTrace(f *testing.F) {
	addFiles(f, "trace.jsonl")
	f.Add([]byte(`{"timestamp": 1e3, "input_length": 3, "output_length": 1, "hash_ids": [9]}`))
	f.Add([]byte("{\"timestamp\": 2}\n{\"timestamp\": 1, \"input_length\": 1, \"output_length\": 1}"))
	f.Add([]byte(`{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1, 2, 3, 4, 5, 6]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ReadTrace(bytes.NewReader(data), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") && !strings.HasPrefix(err.Error(), "reading fuzz") {
				t.Fatalf("error without the file's name: %v", err)
			}
			return
		}
		var prev time.Duration
		for _, r := range tr.Requests {
			if r.At < prev || r.Input < 1 || r.Input > MaxLength || r.Output < 1 || r.Line < 1 {
				t.Fatalf("bad request %+v after %v", r, prev)
			}
			prev = r.At
		}
		const block = 4
		if tr.Check(block) != nil {
			return
		}
		s := tr.Stats(block)
		if s.Prefix > s.Seen || s.Seen > s.Blocks || s.PrefixTokens > s.InputTokens {
			t.Fatalf("stats %+v", s)
		}
		w, err := New(Options{Trace: tr, BlockSize: block, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range tr.Requests[:min(len(tr.Requests), 4)] {
			if r.Input > 4096 {
				continue
			}
			if req := w.Request(i); len(strings.Fields(req.Prompt)) != r.Input {
				t.Fatalf("request %d: %d words, want %d", i, len(strings.Fields(req.Prompt)), r.Input)
			}
		}
	})
}

// A --corpus file of any bytes gives prompts of valid UTF-8, the same for
// the same index, or a clear error (an empty file); never a panic or a
// hang, wherever the random windows fall.
func FuzzCorpus(f *testing.F) {
	addFiles(f, "corpus.txt")
	for _, s := range []string{"héllo wörld", "\xff\xfe\x00", "a", "\n\n\n", strings.Repeat("é", 100)[1:]} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := dir + "/corpus.txt"
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		// Few tokens: a corpus with none (whitespace, bytes that are no
		// text) is read round and round, a byte a read for a 1-byte file.
		w, err := New(Options{Corpus: path, Input: Fixed(4), Seed: 3})
		if err != nil {
			if len(data) > 0 || !strings.Contains(err.Error(), "empty") {
				t.Fatalf("%d bytes: %v", len(data), err)
			}
			return
		}
		defer w.Close()
		for i := range 2 {
			p := w.Request(i).Prompt
			if !utf8.ValidString(p) {
				t.Fatalf("request %d: prompt %q is not UTF-8", i, p)
			}
			if p != w.Request(i).Prompt {
				t.Fatalf("request %d: another window for the same index", i)
			}
		}
	})
}
