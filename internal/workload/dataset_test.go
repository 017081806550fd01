package workload

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// readAll reads every item of a dataset.
func readAll(t *testing.T, r *Reader) []Item {
	t.Helper()
	var out []Item
	for r.Next() {
		out = append(out, *r.Item())
	}
	return out
}

func TestReaderFormats(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file    string
		format  Format
		want    []Item
		skipped map[string]int
	}{
		{"sharegpt.json", FormatShareGPT, []Item{
			{Prompt: "What is the capital of France?", Reply: "The capital of France is Paris.", Line: 2},
			{Prompt: "Write a haiku about autumn leaves falling in the park.", Reply: "Red leaves drift and fall, the path is soft with their gold, the park holds its breath.", Line: 11},
			{Prompt: "Explain why the sky is blue in two sentences.", Reply: "Sunlight scatters off the molecules of the air, and blue light scatters most. So the sky looks blue from every side.", Line: 26},
			{Prompt: "Traduis « bonne journée » en allemand, s'il te plaît.", Reply: "« Schönen Tag » ou « einen schönen Tag noch ».", Line: 42},
		}, map[string]int{skipNoReply: 3}},
		{"sharegpt.jsonl", FormatShareGPT, []Item{
			{Prompt: "Name three primary colours.", Reply: "Red, yellow and blue.", Line: 1},
			{Prompt: "Count to five.", Reply: "One, two, three, four, five.", Line: 4},
		}, map[string]int{skipNoReply: 1}},
		{"prompts.jsonl", FormatPrompts, []Item{
			{Prompt: "Summarise the plot of a detective novel in one paragraph.", OutputTokens: 200, Line: 1},
			{Prompt: "List five uses for a paper clip.", OutputTokens: 64, Line: 2},
			{Prompt: "Write a limerick about a cat who learned to code.", Line: 3},
			{Prompt: "", OutputTokens: 10, Line: 5},
			{Prompt: "Explain the difference between a list and a tuple in Python.", Line: 6},
		}, map[string]int{}},
	} {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open("testdata/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r := NewReader(f, c.file, "")
			got := readAll(t, r)
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			if r.Format() != c.format {
				t.Errorf("format %q, want %q", r.Format(), c.format)
			}
			if d := cmp.Diff(c.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("items (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.skipped, r.Skipped(), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("skipped (-want +got):\n%s", d)
			}
		})
	}
}

func TestReaderChat(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/chat.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := NewReader(f, "chat.jsonl", "")
	got := readAll(t, r)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.Format() != FormatChat || len(got) != 4 {
		t.Fatalf("format %q, %d items; want chat, 4", r.Format(), len(got))
	}
	for _, c := range []struct {
		name   string
		got    any
		want   any
		actual bool
	}{
		{"flattened", got[0].Prompt, "system: You are a helpful assistant.\n\nuser: What is the boiling point of water at sea level?", true},
		{"max_tokens", got[0].OutputTokens, 100, true},
		{"max_completion_tokens", got[1].OutputTokens, 50, true},
		{"output_tokens", got[3].OutputTokens, 30, true},
		{"one message is its content", got[1].Prompt, "What's the weather in Paris?", true},
		{"tools kept", strings.Contains(string(got[1].Tools), `"get_weather"`), true, true},
		{"content parts", got[2].Messages[0].Content, "Describe this picture.", true},
		{"raw kept", strings.Contains(string(got[2].Messages[0].Raw), "image_url"), true, true},
		{"null content", got[3].Messages[1].Content, "", true},
		{"tool_calls in raw", strings.Contains(string(got[3].Messages[1].Raw), `"tool_calls"`), true, true},
		{"role", got[3].Messages[2].Role, "tool", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("got %v, want %v", c.got, c.want)
			}
		})
	}
}

func TestReaderErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		format Format
		in     string
		want   string
	}{
		{"role not a string", "", `{"messages": [{"role": "user", "content": "a"}]}` + "\n" +
			`{"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}, {"role": 7, "content": "c"}]}`,
			`data.jsonl:2: field "messages[2].role": want a string`},
		{"role missing", "", `{"messages": [{"content": "c"}]}`, `data.jsonl:1: field "messages[0].role": want a string`},
		{"messages not an array", "chat", `{"messages": "hi"}`, `data.jsonl:1: field "messages": want an array`},
		{"message not an object", "", `{"messages": ["hi"]}`, `data.jsonl:1: field "messages[0]": want an object`},
		{"content a number", "", `{"messages": [{"role": "user", "content": 3}]}`, `data.jsonl:1: field "messages[0].content": want a string or an array of parts`},
		{"part text", "", `{"messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]}`, `data.jsonl:1: field "messages[0].content[0].text": want a string`},
		{"tools not an array", "", `{"messages": [{"role": "user", "content": "a"}], "tools": {}}`, `data.jsonl:1: field "tools": want an array`},
		{"max_tokens negative", "", `{"prompt": "a", "max_tokens": -1}`, `data.jsonl:1: field "max_tokens": want a whole number from 0 to 1048576`},
		{"max_tokens float", "", `{"prompt": "a", "max_tokens": 1.5}`, `data.jsonl:1: field "max_tokens": want a whole number from 0 to 1048576`},
		{"prompt not a string", "prompts", `{"prompt": ["a"]}`, `data.jsonl:1: field "prompt": want a string`},
		{"prompt missing", "prompts", "\n\n" + `{"text": "a"}`, `data.jsonl:3: field "prompt": want a string`},
		{"bad json line", "", `{"prompt": "a"}` + "\n" + `{"prompt": "b"`, `data.jsonl:2: invalid JSON: the record ends early`},
		{"not an object", "prompts", `["a"]`, `data.jsonl:1: a JSON array: want JSON lines for the prompts format`},
		{"line not an object", "prompts", `{"prompt": "a"}` + "\n" + `42`, `data.jsonl:2: want a JSON object`},
		{"unknown keys", "", `{"text": "a"}`, `data.jsonl:1: cannot tell the format: want a JSON array of ShareGPT conversations, or JSON lines with "prompt" or "messages"`},
		{"not json", "", `hello`, `data.jsonl:1: cannot tell the format: want a JSON array (ShareGPT) or JSON lines of objects`},
		{"sharegpt value", "", "[\n{\"conversations\": [{\"from\": \"human\", \"value\": \"a\"}]},\n{\"conversations\": [\n{\"from\": \"human\", \"value\": 1}]}\n]",
			`data.jsonl:3: field "conversations[0].value": want a string`},
		{"sharegpt from", "", `[{"conversations": [{"value": "a"}]}]`, `data.jsonl:1: field "conversations[0].from": want a string`},
		{"sharegpt conversations", "", `[{"conversations": {}}]`, `data.jsonl:1: field "conversations": want an array`},
		{"sharegpt element", "", "[\n1]", `data.jsonl:2: want a JSON object`},
		{"sharegpt truncated", "", "[\n{\"conversations\": []},\n{\"conv", `data.jsonl:3: invalid JSON: the record ends early`},
		{"sharegpt unclosed", "", "[\n{\"conversations\": []}", `data.jsonl:2: the file ends inside the array`},
		{"sharegpt trailing", "", "[]\n[]", `data.jsonl:2: want the end of the file after the array`},
		{"sharegpt syntax", "", "[\n{\"conversations\": [}]", `data.jsonl:2: invalid JSON: invalid character '}' looking for beginning of value`},
		{"bad format line", "sharegpt", `{"conversations": 1}`, `data.jsonl:1: field "conversations": want an array`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(c.in), "data.jsonl", c.format)
			readAll(t, r)
			got := fmt.Sprint(r.Err())
			if got != c.want {
				t.Errorf("error %s\nwant  %s", got, c.want)
			}
		})
	}
}

func TestReaderCap(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 3000)
	for _, c := range []struct{ name, in, want string }{
		{"jsonl", `{"prompt": "a"}` + "\n" + `{"prompt": "` + big + `"}`, "data.jsonl:2: line longer than 1024 bytes, the cap on one record"},
		{"array", "[\n" + `{"conversations": [{"from": "human", "value": "` + big + `"}]}]`, "data.jsonl:2: element 0 is larger than 1024 bytes, the cap on one record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(c.in), "data.jsonl", "")
			r.MaxRecord = 1024
			readAll(t, r)
			if got := fmt.Sprint(r.Err()); got != c.want {
				t.Errorf("error %s\nwant  %s", got, c.want)
			}
		})
	}
	// An element larger than the read-ahead slack is stopped before it is
	// read whole.
	src := &genReader{head: "[", elem: `{"conversations": [{"from": "human", "value": "` + strings.Repeat("y", 4<<20) + `"}]}`, n: 1}
	r := NewReader(src, "big.json", "")
	r.MaxRecord = 1 << 20
	readAll(t, r)
	if r.Err() == nil || !strings.Contains(r.Err().Error(), "the cap on one record") {
		t.Errorf("error %v, want the cap", r.Err())
	}
	if src.read > 1<<20+1<<18 {
		t.Errorf("read %d bytes of a 4 MiB record with a 1 MiB cap", src.read)
	}
}

// genReader produces a JSON array of n copies of elem, lazily.
type genReader struct {
	head, elem string
	n, done    int
	buf        []byte
	read       int
}

func (g *genReader) Read(p []byte) (int, error) {
	for len(g.buf) == 0 {
		switch {
		case g.head != "":
			g.buf, g.head = []byte(g.head), ""
		case g.done < g.n:
			if g.done > 0 {
				g.buf = append(g.buf, ",\n"...)
			}
			g.buf = append(g.buf, g.elem...)
			g.done++
		case g.done == g.n:
			g.buf = []byte("]\n")
			g.done++
		default:
			return 0, io.EOF
		}
	}
	n := copy(p, g.buf)
	g.buf = g.buf[n:]
	g.read += n
	return n, nil
}

// TestShareGPTStreams reads a large array and checks that the reader never
// runs far ahead of the element it returns: memory holds one record and a
// buffer, not the file.
func TestShareGPTStreams(t *testing.T) {
	t.Parallel()
	elem := `{"conversations": [{"from": "human", "value": "` + strings.Repeat("word ", 200) + `"}, {"from": "gpt", "value": "ok"}]}`
	const n = 5000
	src := &genReader{head: "[\n", elem: elem, n: n}
	r := NewReader(src, "big.json", "")
	k := 0
	for r.Next() {
		k++
		if ahead := src.read - k*(len(elem)+2); ahead > 256<<10 {
			t.Fatalf("after %d elements the reader is %d bytes ahead", k, ahead)
		}
		if r.Item().Line != k+1 {
			t.Fatalf("element %d on line %d, want %d", k, r.Item().Line, k+1)
		}
	}
	if r.Err() != nil || k != n {
		t.Fatalf("%d elements, error %v; want %d", k, r.Err(), n)
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"", ""}, {"auto", ""}, {"ShareGPT", "sharegpt"}, {"prompts", "prompts"}, {"chat", "chat"},
		{"csv", `dataset format "csv": want auto, sharegpt, prompts or chat`},
	} {
		f, err := ParseFormat(c.in)
		got := string(f)
		if err != nil {
			got = err.Error()
		}
		if got != c.want {
			t.Errorf("ParseFormat(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}
