package workload

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func load(t *testing.T, file string, o LoadOptions) (*Dataset, error) {
	t.Helper()
	f, err := os.Open("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return LoadDataset(f, file, o)
}

func TestLoadDataset(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		file    string
		o       LoadOptions
		items   int
		usable  int
		skipped string
	}{
		{"sharegpt", "sharegpt.json", LoadOptions{}, 4, 4, "3 skipped: 3 no human turn followed by a reply"},
		{"sharegpt sample", "sharegpt.json", LoadOptions{Sample: 2, Seed: 1}, 2, 4, "3 skipped: 3 no human turn followed by a reply"},
		{"sharegpt max prompt", "sharegpt.json", LoadOptions{Filter: Filter{MaxPromptTokens: 8}}, 1, 1,
			"6 skipped: 3 no human turn followed by a reply, 3 prompt over 8 tokens"},
		{"sharegpt min output", "sharegpt.json", LoadOptions{Filter: Filter{MinOutputTokens: 10}, Tokenizer: &wsTok{}}, 3, 3,
			"4 skipped: 3 no human turn followed by a reply, 1 output under 10 tokens"},
		{"prompts", "prompts.jsonl", LoadOptions{}, 4, 4, "1 skipped: 1 empty prompt"},
		{"prompts max output", "prompts.jsonl", LoadOptions{Filter: Filter{MaxOutputTokens: 100}}, 3, 3,
			"2 skipped: 1 empty prompt, 1 output over 100 tokens"},
		{"chat", "chat.jsonl", LoadOptions{Tokenizer: &mergeTok{}}, 4, 4, "0 skipped"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := load(t, c.file, c.o)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Items) != c.items || d.Usable != c.usable {
				t.Errorf("%d items of %d usable, want %d of %d", len(d.Items), d.Usable, c.items, c.usable)
			}
			if got := skippedText(d.Skipped); got != c.skipped {
				t.Errorf("skipped %q, want %q", got, c.skipped)
			}
			count := EstimateTokens
			if c.o.Tokenizer != nil {
				count = c.o.Tokenizer.Count
			}
			for _, it := range d.Items {
				if it.PromptTokens != count(it.Prompt) || it.Reply != "" {
					t.Errorf("item %q: %d prompt tokens (want %d), reply %q", it.Prompt, it.PromptTokens, count(it.Prompt), it.Reply)
				}
				if d.Format == FormatShareGPT && it.OutputTokens == 0 {
					t.Errorf("item %q: no output length", it.Prompt)
				}
			}
		})
	}
}

func TestLoadDatasetShareGPTOutput(t *testing.T) {
	t.Parallel()
	d, err := load(t, "sharegpt.json", LoadOptions{Tokenizer: &wsTok{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range d.Items {
		if strings.HasPrefix(it.Prompt, "What is the capital") && it.OutputTokens != 6 {
			t.Errorf("output %d tokens, want 6 (the reply's words)", it.OutputTokens)
		}
	}
}

func TestLoadDatasetSample(t *testing.T) {
	t.Parallel()
	// A sample is the same for the same seed, differs for another, and
	// every record has a chance.
	var in strings.Builder
	for i := range 100 {
		fmt.Fprintf(&in, "{\"prompt\": \"p%d\"}\n", i)
	}
	sample := func(seed int64) string {
		d, err := LoadDataset(strings.NewReader(in.String()), "p.jsonl", LoadOptions{Sample: 10, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var ps []string
		for _, it := range d.Items {
			ps = append(ps, it.Prompt)
		}
		return strings.Join(ps, " ")
	}
	a := sample(1)
	if a != sample(1) {
		t.Error("same seed gave another sample")
	}
	if a == sample(2) {
		t.Error("another seed gave the same sample")
	}
	seen := map[string]bool{}
	for seed := range int64(200) {
		for _, p := range strings.Fields(sample(seed)) {
			seen[p] = true
		}
	}
	if len(seen) < 95 {
		t.Errorf("200 samples of 10 saw %d of 100 records, want nearly all", len(seen))
	}
}

func TestLoadDatasetEmpty(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, in, want string }{
		{"empty file", "", "no usable requests in d.jsonl (0 skipped)"},
		{"all skipped", `[{"conversations": [{"from": "human", "value": "a"}]}, {"conversations": []}]`,
			"no usable requests in d.jsonl (2 skipped: 2 no human turn followed by a reply)"},
		{"all filtered", `{"prompt": "one two three"}` + "\n" + `{"prompt": " "}`,
			"no usable requests in d.jsonl (2 skipped: 1 empty prompt, 1 prompt over 2 tokens)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadDataset(strings.NewReader(c.in), "d.jsonl", LoadOptions{Filter: Filter{MaxPromptTokens: 2}})
			if fmt.Sprint(err) != c.want {
				t.Errorf("error %v\nwant  %s", err, c.want)
			}
		})
	}
}

// TestLoadDatasetCountLate checks that counting only the sample (no
// filter) keeps the same records, counted the same, as counting all.
func TestLoadDatasetCountLate(t *testing.T) {
	t.Parallel()
	var in strings.Builder
	in.WriteString("[\n")
	for i := range 1500 {
		if i > 0 {
			in.WriteString(",\n")
		}
		fmt.Fprintf(&in, `{"conversations": [{"from": "human", "value": %s}, {"from": "gpt", "value": %s}]}`, mustJSON(prose(1, i, 5+i%40)), mustJSON(prose(2, i, 1+i%90)))
	}
	in.WriteString("\n]")
	run := func(f Filter) []Item {
		d, err := LoadDataset(strings.NewReader(in.String()), "s.json", LoadOptions{Sample: 50, Seed: 3, Filter: f, Tokenizer: &wsTok{}})
		if err != nil {
			t.Fatal(err)
		}
		return d.Items
	}
	late, all := run(Filter{}), run(Filter{MaxPromptTokens: MaxLength})
	if d := cmp.Diff(all, late); d != "" {
		t.Errorf("samples differ (-counting all +counting the sample):\n%s", d)
	}
}
