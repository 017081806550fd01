package workload

import (
	"crypto/sha256"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tokperf/tokperf/internal/record"
)

// TestSyntheticUnchanged pins the older generator's output, byte for byte,
// as it was before the new one came: the CLI's golden files depend on it.
func TestSyntheticUnchanged(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    Synthetic
		want string
	}{
		{Synthetic{InputTokens: 128, OutputTokens: 1000, IgnoreEOS: true, Seed: 1}, "a9af6ff62c0e5dc2b79a5de31110aee0d45f0c476f0a2bfda4b176bbc5a43c5b"},
		{Synthetic{InputTokens: 64, Seed: 3, SharedPrefix: 16}, "4a86f5640384518471fb9a36c7edf69d952c21b31ca8c51e321ab2bd8f8697b4"},
		{Synthetic{InputTokens: 1}, "365752e23a072e99f2c3092abca5298e7369405509412f2ff993a45972f4ce1a"},
	} {
		t.Run(fmt.Sprint(c.s.InputTokens), func(t *testing.T) {
			h := sha256.New()
			for i := range 50 {
				r := c.s.Request(i)
				fmt.Fprintf(h, "%q %d %d %v %v\n", r.Prompt, r.PromptTokens, r.MaxTokens, r.IgnoreEOS, r.Temperature)
			}
			if got := fmt.Sprintf("%x", h.Sum(nil)); got != c.want {
				t.Errorf("Synthetic's prompts changed: hash %s, want %s", got, c.want)
			}
		})
	}
}

func mustNew(t testing.TB, o Options) *Workload {
	t.Helper()
	w, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func mustLengths(t testing.TB, spec string) Lengths {
	t.Helper()
	l, err := ParseLengths(spec)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestWorkloadLengths checks that every generated prompt has its sampled
// length: exactly by a tokenizer, and by EstimateTokens without one.
func TestWorkloadLengths(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		tok    Tokenizer
		corpus string
		input  string
		shared int
	}{
		{"estimate", nil, "", "512", 0},
		{"estimate/lognormal/shared", nil, "", "200:lognormal:0.8", 32},
		{"whitespace", &wsTok{}, "", "512", 0},
		{"whitespace/uniform/shared", &wsTok{}, "", "1-300", 16},
		{"merge", &mergeTok{}, "", "512", 0},
		{"merge/lognormal/shared", &mergeTok{}, "", "300:lognormal:0.7", 24},
		{"merge/corpus", &mergeTok{}, "testdata/corpus.txt", "1-700", 8},
		{"estimate/corpus", nil, "testdata/corpus.txt", "1-700", 0},
		{"whitespace/corpus", &wsTok{}, "testdata/corpus.txt", "50:normal:20", 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := mustLengths(t, c.input)
			w := mustNew(t, Options{Tokenizer: c.tok, Corpus: c.corpus, Input: in, Output: Fixed(64), SharedPrefix: c.shared, Seed: 5})
			count, source := EstimateTokens, record.SourceEstimate
			if c.tok != nil {
				count, source = c.tok.Count, record.SourceTokenizer
			}
			own := 0
			for i := range 60 {
				req := w.Request(i)
				want := in.At(5, i)
				marker := count("r" + fmt.Sprint(i))
				got := count(req.Prompt)
				switch {
				case req.PromptSource != source:
					t.Fatalf("request %d: source %q, want %q", i, req.PromptSource, source)
				case got != req.PromptTokens:
					t.Fatalf("request %d: says %d tokens, counts %d", i, req.PromptTokens, got)
				case want >= marker && got != want:
					t.Fatalf("request %d: %d tokens, want %d: %q", i, got, want, req.Prompt)
				case want < marker && got != marker:
					t.Fatalf("request %d: %d tokens, want just the marker (%d): %q", i, got, marker, req.Prompt)
				case req.MaxTokens != 64:
					t.Fatalf("request %d: max tokens %d, want 64", i, req.MaxTokens)
				}
				if !strings.Contains(req.Prompt, fmt.Sprintf("r%d ", i)) && !strings.HasSuffix(req.Prompt, fmt.Sprintf("r%d", i)) {
					t.Fatalf("request %d has no marker of its own: %q", i, req.Prompt)
				}
				if want > c.shared+marker {
					own++
				}
			}
			if own == 0 {
				t.Fatal("no request was long enough to test")
			}
		})
	}
}

// TestWorkloadPrefix checks what a prefix cache sees: prompts share exactly
// the shared part, then differ.
func TestWorkloadPrefix(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		tok    Tokenizer
		shared int
	}{
		{"none/estimate", nil, 0},
		{"none/whitespace", &wsTok{}, 0},
		{"shared/estimate", nil, 40},
		{"shared/whitespace", &wsTok{}, 40},
		{"shared/merge", &mergeTok{}, 40},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := mustNew(t, Options{Tokenizer: c.tok, Input: Fixed(256), SharedPrefix: c.shared, Seed: 9})
			a, b := w.Request(3).Prompt, w.Request(4).Prompt
			common := 0
			for common < min(len(a), len(b)) && a[common] == b[common] {
				common++
			}
			if c.shared == 0 {
				if common > 1 { // "r3…" and "r4…" share the "r"
					t.Errorf("prompts share %q, want nothing", a[:common])
				}
				return
			}
			prefix := w.prefix
			if !strings.HasPrefix(a, prefix+" r3 ") || !strings.HasPrefix(b, prefix+" r4 ") {
				t.Fatalf("prompts do not start with the shared prefix and their marker:\n%q\n%q", a[:80], b[:80])
			}
			if common != len(prefix)+2 {
				t.Errorf("prompts share %d bytes, want the prefix (%d) and \" r\"", common, len(prefix))
			}
			if c.tok != nil && c.tok.Count(prefix) != c.shared || c.tok == nil && EstimateTokens(prefix) != c.shared {
				t.Errorf("shared prefix is not %d tokens: %q", c.shared, prefix)
			}
			if c.tok != nil {
				// A prefix cache matches token ids: the first SharedPrefix
				// are the same in every prompt, the next differs.
				ia, ib := c.tok.Encode(a), c.tok.Encode(b)
				if !slices.Equal(ia[:c.shared], ib[:c.shared]) || ia[c.shared] == ib[c.shared] && ia[c.shared+1] == ib[c.shared+1] {
					t.Errorf("token ids: %v… and %v…, want the first %d equal, then a difference", ia[:c.shared+2], ib[:c.shared+2], c.shared)
				}
			}
		})
	}
}

func TestWorkloadDeterministic(t *testing.T) {
	t.Parallel()
	o := Options{Tokenizer: &mergeTok{}, Input: mustLengths(t, "100:lognormal:0.5"), Output: mustLengths(t, "10-500"), Seed: 11, SharedPrefix: 5}
	a, b := mustNew(t, o), mustNew(t, o)
	b.Prepare(0, 30)
	outs := map[int]bool{}
	for i := range 30 {
		ra, rb := a.Request(i), b.Request(i)
		if ra.Prompt != rb.Prompt || ra.MaxTokens != rb.MaxTokens || ra.PromptTokens != rb.PromptTokens {
			t.Fatalf("request %d differs between two workloads of the same options", i)
		}
		outs[ra.MaxTokens] = true
	}
	if len(outs) < 20 {
		t.Errorf("%d distinct output lengths in 30, want varied ones", len(outs))
	}
	if a.Late() != 30 || b.Late() != 0 {
		t.Errorf("late: %d and %d, want 30 (nothing prepared) and 0", a.Late(), b.Late())
	}
	o.Seed = 12
	if mustNew(t, o).Request(0).Prompt == a.Request(0).Prompt {
		t.Error("another seed gave the same prompt")
	}
}

func TestWorkloadPrepare(t *testing.T) {
	t.Parallel()
	w := mustNew(t, Options{Input: Fixed(64), Seed: 1})
	w.Prepare(100, 50)
	for i := 100; i < 150; i++ {
		w.Request(i)
	}
	if w.Late() != 0 {
		t.Fatalf("%d requests built late inside the prepared window", w.Late())
	}
	w.Request(99)
	w.Request(150)
	if w.Late() != 2 {
		t.Fatalf("late %d, want 2 (outside the window)", w.Late())
	}
	w.Prepare(150, 10) // the next stage replaces the last
	if len(w.built) != 10 {
		t.Fatalf("window holds %d, want 10", len(w.built))
	}
}

func TestWorkloadDataset(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		o     Options
		check func(t *testing.T, reqs []record.Request)
	}{
		{"sharegpt", Options{Dataset: "testdata/sharegpt.json", Tokenizer: &wsTok{}, Output: Fixed(99)}, func(t *testing.T, reqs []record.Request) {
			for _, r := range reqs {
				if r.MaxTokens == 99 || r.MaxTokens == 0 || r.PromptSource != record.SourceTokenizer {
					t.Errorf("%q: max tokens %d (want the reply's length), source %q", r.Prompt, r.MaxTokens, r.PromptSource)
				}
			}
		}},
		{"sharegpt override", Options{Dataset: "testdata/sharegpt.json", Output: Fixed(99), OverrideOutput: true}, func(t *testing.T, reqs []record.Request) {
			for _, r := range reqs {
				if r.MaxTokens != 99 || r.PromptSource != record.SourceEstimate {
					t.Errorf("%q: max tokens %d (want 99), source %q", r.Prompt, r.MaxTokens, r.PromptSource)
				}
			}
		}},
		{"prompts fill in", Options{Dataset: "testdata/prompts.jsonl", Output: Fixed(7)}, func(t *testing.T, reqs []record.Request) {
			got := map[int]int{}
			for _, r := range reqs {
				got[r.MaxTokens]++
			}
			if got[200] == 0 || got[64] == 0 || got[7] == 0 {
				t.Errorf("output lengths %v: want the file's (200, 64) and 7 for the rest", got)
			}
		}},
		{"chat", Options{Dataset: "testdata/chat.jsonl", Format: FormatChat, Requests: 2, Seed: 3}, func(t *testing.T, reqs []record.Request) {
			distinct := map[string]bool{}
			for _, r := range reqs {
				distinct[r.Prompt] = true
				if len(r.Messages) == 0 || r.Prompt != Flatten(r.Messages) {
					t.Errorf("chat request without messages, or prompt not flattened: %q", r.Prompt)
				}
			}
			if len(distinct) != 2 {
				t.Errorf("%d distinct requests, want the sample of 2, repeated", len(distinct))
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := mustNew(t, c.o)
			w.Prepare(0, 10)
			var reqs []record.Request
			for i := range 10 {
				reqs = append(reqs, w.Request(i))
			}
			c.check(t, reqs)
		})
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		o    Options
		want string
	}{
		{"both", Options{Dataset: "a", Corpus: "b"}, "a workload takes a dataset or a corpus, not both"},
		{"no input", Options{}, "a generated workload needs an input length"},
		{"no corpus", Options{Input: Fixed(1), Corpus: "testdata/none.txt"}, "corpus: open testdata/none.txt: no such file or directory"},
		{"no dataset", Options{Dataset: "testdata/none.jsonl"}, "dataset: open testdata/none.jsonl: no such file or directory"},
		{"empty dataset", Options{Dataset: "testdata/lengths.txt", Format: FormatPrompts}, `testdata/lengths.txt:1: invalid JSON: want a JSON object`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.o)
			if fmt.Sprint(err) != c.want {
				t.Errorf("error %v\nwant  %s", err, c.want)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		o    Options
		want string
	}{
		{"synthetic", Options{Input: mustLengths(t, "512:lognormal:0.6"), Output: Fixed(256), Seed: 1, SharedPrefix: 16},
			"synthetic text (3174 words, Zipf), input 512:lognormal:0.6 tokens, output 256 tokens, shared prefix 16 tokens, lengths estimated (no tokenizer), seed 1"},
		{"corpus", Options{Corpus: "testdata/corpus.txt", Input: Fixed(100), Output: mustLengths(t, "10-20"), Tokenizer: &wsTok{}},
			"corpus testdata/corpus.txt (random windows), input 100 tokens, output 10-20 tokens, lengths by tokenizer whitespace, seed 0"},
		{"dataset", Options{Dataset: "testdata/sharegpt.json", Requests: 2, Seed: 4},
			"dataset testdata/sharegpt.json (sharegpt): 2 requests sampled of 4 usable, 3 skipped: 3 no human turn followed by a reply, output as the dataset says, lengths estimated (no tokenizer), seed 4"},
		{"dataset fill in", Options{Dataset: "testdata/prompts.jsonl", Output: Fixed(50), Tokenizer: &mergeTok{}},
			"dataset testdata/prompts.jsonl (prompts): 4 requests, 1 skipped: 1 empty prompt, output as the dataset says, else 50 tokens, lengths by tokenizer merge, seed 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := mustNew(t, c.o).Describe(); got != c.want {
				t.Errorf("Describe\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

// BenchmarkPrompt measures building 512-token prompts, the work Prepare
// does before a stage.
func BenchmarkPrompt(b *testing.B) {
	for _, c := range []struct {
		name string
		tok  Tokenizer
	}{
		{"estimate", nil},
		{"tokenizer=whitespace", &wsTok{}},
		{"tokenizer=merge", &mergeTok{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			w := mustNew(b, Options{Tokenizer: c.tok, Input: Fixed(512), Seed: 1})
			i := 0
			for b.Loop() {
				w.build(i)
				i++
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "prompts/s")
		})
	}
}

func TestWorkloadCorpus(t *testing.T) {
	t.Parallel()
	tiny := t.TempDir() + "/tiny.txt"
	if err := os.WriteFile(tiny, []byte("héllo wörld"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, file string
		tok        Tokenizer
		n          int
	}{
		{"tiny/estimate", tiny, nil, 3000},
		{"tiny/merge", tiny, &mergeTok{}, 3000},
		{"corpus/whitespace", "testdata/corpus.txt", &wsTok{}, 2000},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := mustNew(t, Options{Corpus: c.file, Tokenizer: c.tok, Input: Fixed(c.n), Seed: 2})
			count := EstimateTokens
			if c.tok != nil {
				count = c.tok.Count
			}
			a, b := w.Request(0).Prompt, w.Request(1).Prompt
			if count(a) != c.n || count(b) != c.n {
				t.Fatalf("%d and %d tokens, want %d", count(a), count(b), c.n)
			}
			if !utf8.ValidString(a) {
				t.Fatal("prompt is not valid UTF-8")
			}
			if a != w.Request(0).Prompt {
				t.Fatal("the same index gave another window")
			}
		})
	}
	// Windows start at random places of the file, at a word.
	w := mustNew(t, Options{Corpus: "testdata/corpus.txt", Input: Fixed(20), Seed: 2})
	starts := map[string]bool{}
	for i := range 40 {
		p := w.Request(i).Prompt
		_, rest, _ := strings.Cut(p, " ")
		starts[strings.Fields(rest)[0]] = true
		if !strings.Contains(string(corpusText(t)), strings.Fields(rest)[0]) {
			t.Fatalf("window %q does not start at a word of the corpus", rest[:20])
		}
	}
	if len(starts) < 20 {
		t.Errorf("%d distinct starts in 40 windows, want random places", len(starts))
	}
}

func corpusText(t *testing.T) []byte {
	b, err := os.ReadFile("testdata/corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	return b
}
