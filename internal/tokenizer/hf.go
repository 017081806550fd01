package tokenizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/tokperf/tokperf/internal/infile"
)

// hf is a tokenizer read from a Hugging Face tokenizer.json with a BPE model. Encoding runs the
// stages of the Hugging Face pipeline in order: added tokens are cut out of the text, each
// remaining segment is normalized, pre-tokenized into pieces, and each piece is merged by the
// BPE model. No post-processor runs: nothing is added.
type hf struct {
	name       string
	added      []addedToken
	addedFirst [256]bool // addedFirst[b]: some added token starts with byte b
	normalize  []normalizer
	pre        []preTokenizer
	byteLevel  bool // pieces are raw bytes and the vocabulary holds GPT-2 byte-level strings
	model      *bpe
	decoders   []decoder
	// tokens[id] is what an id stands for: raw bytes for a byte-level tokenizer's model
	// tokens, the vocabulary string otherwise (the decoders turn "▁" and "<0x0A>" into text).
	tokens    []string
	plainDec  bool // decoding is concatenating tokens (byte-level, one ByteLevel decoder)
	scratches sync.Pool
}

type addedToken struct {
	content              string
	id                   int
	lstrip, rstrip, word bool
}

// fileJSON is the part of tokenizer.json that encoding needs. The post_processor is not read:
// Encode adds no special tokens.
type fileJSON struct {
	AddedTokens []struct {
		ID         *int   `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
	} `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Model        *modelJSON      `json:"model"`
	Decoder      json.RawMessage `json:"decoder"`
}

type modelJSON struct {
	Type                    string          `json:"type"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	FuseUnk                 bool            `json:"fuse_unk"`
	Dropout                 *float64        `json:"dropout"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
}

// maxTokenID bounds the ids a tokenizer.json may use (the largest vocabularies have about
// 262,000), so that a broken file cannot make Load allocate gigabytes.
const maxTokenID = 1 << 22

// parseHF reads a tokenizer.json. Its errors say what is wrong, not where the file is: the
// caller names the file.
func parseHF(data []byte) (*hf, error) {
	var f fileJSON
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %w", err)
	}
	if f.Model == nil {
		return nil, errors.New("no model: not a tokenizer.json")
	}
	m := f.Model
	if m.Type == "" && len(m.Merges) > 0 {
		m.Type = "BPE" // old files leave the type out
	}
	if m.Type != "BPE" {
		return nil, fmt.Errorf("model.type %q is not supported (byte-level BPE and SentencePiece-style BPE are)", m.Type)
	}
	if m.Dropout != nil && *m.Dropout > 0 {
		return nil, fmt.Errorf("model.dropout %v is not supported: it makes encoding random", *m.Dropout)
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" {
		return nil, fmt.Errorf("model.continuing_subword_prefix %q is not supported", *m.ContinuingSubwordPrefix)
	}
	if m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return nil, fmt.Errorf("model.end_of_word_suffix %q is not supported", *m.EndOfWordSuffix)
	}
	var vocab map[string]int
	if err := json.Unmarshal(m.Vocab, &vocab); err != nil || vocab == nil {
		return nil, errors.New("model.vocab is not an object of token: id")
	}
	t := &hf{}
	var err error
	if t.normalize, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	if t.pre, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	if t.decoders, err = parseDecoder(f.Decoder); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	for _, p := range t.pre {
		if _, ok := p.(byteLevelPre); ok {
			t.byteLevel = true
		}
	}
	if !t.byteLevel && len(t.decoders) == 1 {
		if _, ok := t.decoders[0].(byteLevelDec); ok {
			t.byteLevel = true // a ByteLevel decoder with no ByteLevel pre-tokenizer: still bytes
		}
	}

	maxID := -1
	for tok, id := range vocab {
		if id < 0 || id > maxTokenID {
			return nil, fmt.Errorf("model.vocab: token %q has id %d", tok, id)
		}
		maxID = max(maxID, id)
	}
	for i, a := range f.AddedTokens {
		if a.ID == nil || *a.ID < 0 || *a.ID > maxTokenID {
			return nil, fmt.Errorf("added_tokens[%d] %q: missing or bad id", i, a.Content)
		}
		if a.Content == "" {
			return nil, fmt.Errorf("added_tokens[%d]: empty content", i)
		}
		maxID = max(maxID, *a.ID)
		t.added = append(t.added, addedToken{content: a.Content, id: *a.ID, lstrip: a.LStrip, rstrip: a.RStrip, word: a.SingleWord})
	}
	// Longest first, so the first match at a position is the longest (leftmost-longest, as
	// the reference's Aho-Corasick matcher).
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i].content) > len(t.added[j].content) })
	for _, a := range t.added {
		t.addedFirst[a.content[0]] = true
	}

	t.tokens = make([]string, maxID+1)
	raw := vocab
	if t.byteLevel {
		raw = make(map[string]int, len(vocab))
		for tok, id := range vocab {
			b, ok := fromByteLevel(tok)
			if !ok {
				// Not a byte-level string (a special token kept in the vocabulary):
				// it can only come from the added tokens, as itself.
				b = tok
			}
			raw[b] = id
			t.tokens[id] = b
		}
	} else {
		for tok, id := range vocab {
			t.tokens[id] = tok
		}
	}
	for _, a := range t.added {
		t.tokens[a.id] = a.content
	}
	t.model, err = newBPE(vocab, raw, m, t.byteLevel)
	if err != nil {
		return nil, err
	}
	t.plainDec = t.byteLevel && len(t.decoders) <= 1
	if len(t.decoders) == 1 {
		if _, ok := t.decoders[0].(byteLevelDec); !ok {
			t.plainDec = false
		}
	}
	t.scratches.New = func() any { return new(scratch) }
	return t, nil
}

// kind names the tokenizer's family for Name.
func (t *hf) kind() string {
	if t.byteLevel {
		return "byte-level BPE"
	}
	return "SentencePiece-style BPE"
}

// hfName is how Name refers to a tokenizer.json: the model's name from the tokenizer_config.json
// beside it where that says one, else the path.
func hfName(path string) string {
	data, err := infile.ReadAll(context.Background(), filepath.Join(filepath.Dir(path), "tokenizer_config.json"), infile.TokenizerConfig)
	if err == nil {
		if name := configName(data); name != "" {
			return name + " tokenizer.json"
		}
	}
	return path
}

// configName is the model's name a tokenizer_config.json says, "" when it
// says none fit to print on one line.
func configName(data []byte) string {
	var c struct {
		NameOrPath string `json:"name_or_path"`
	}
	if json.Unmarshal(data, &c) != nil || strings.ContainsAny(c.NameOrPath, "\n\r") {
		return ""
	}
	return c.NameOrPath
}

func (t *hf) Name() string { return t.name }

// scratch holds the buffers one Encode or Count call reuses.
type scratch struct {
	runes   []rune
	offsets []int
	pieces  []piece
	next    []piece
	spans   []span
	nodes   []node
	heap    candidates
	words   map[string][]int // piece → ids, for a merges model (bpe.remember)
	sym     []int
	ranks   []int
	ids     []int
}

// piece is a part of the text on its way through the pre-tokenizers. first says it starts the
// text, which the Metaspace pre-tokenizer's prepend_scheme "first" needs.
type piece struct {
	s     string
	first bool
}

func (t *hf) Encode(text string) []int {
	var ids []int
	t.encode(text, func(id int) { ids = append(ids, id) })
	return ids
}

func (t *hf) Count(text string) int {
	n := 0
	t.encode(text, func(int) { n++ })
	return n
}

func (t *hf) encode(text string, emit func(int)) {
	sc := t.scratches.Get().(*scratch)
	defer t.scratches.Put(sc)
	start := 0 // start of the text not yet encoded
	for i := 0; i < len(text); i++ {
		if !t.addedFirst[text[i]] {
			continue
		}
		a, ok := t.addedAt(text, i)
		if !ok {
			continue
		}
		end := i + len(a.content)
		before := text[start:i]
		if a.lstrip {
			before = strings.TrimRightFunc(before, unicode.IsSpace)
		}
		t.encodeSegment(sc, before, start == 0, emit)
		emit(a.id)
		if a.rstrip {
			end = len(text) - len(strings.TrimLeftFunc(text[end:], unicode.IsSpace))
		}
		start = end
		i = end - 1
	}
	t.encodeSegment(sc, text[start:], start == 0, emit)
}

// addedAt returns the longest added token that starts at text[i], honouring single_word.
func (t *hf) addedAt(text string, i int) (addedToken, bool) {
	for _, a := range t.added {
		if !strings.HasPrefix(text[i:], a.content) {
			continue
		}
		if a.word && (wordBefore(text[:i]) || wordAfter(text[i+len(a.content):])) {
			continue
		}
		return a, true
	}
	return addedToken{}, false
}

func wordBefore(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWordRune(r)
}

func wordAfter(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWordRune(r)
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// encodeSegment encodes text that holds no added token.
func (t *hf) encodeSegment(sc *scratch, text string, first bool, emit func(int)) {
	if text == "" {
		return
	}
	for _, n := range t.normalize {
		text = n.normalize(text)
	}
	if text == "" {
		return
	}
	sc.pieces = append(sc.pieces[:0], piece{s: text, first: first})
	for _, p := range t.pre {
		sc.next = p.split(sc, sc.pieces, sc.next[:0])
		sc.pieces, sc.next = sc.next, sc.pieces
	}
	for _, p := range sc.pieces {
		t.model.encode(sc, p.s, emit)
	}
}

func (t *hf) Decode(ids []int) string {
	if t.plainDec {
		var b strings.Builder
		for _, id := range ids {
			if id >= 0 && id < len(t.tokens) {
				b.WriteString(t.tokens[id])
			}
		}
		return b.String()
	}
	// The decoders run over every token, added ones included, as the reference's do.
	run := make([]string, 0, len(ids))
	for _, id := range ids {
		if id >= 0 && id < len(t.tokens) {
			run = append(run, t.tokens[id])
		}
	}
	for _, d := range t.decoders {
		run = d.decode(run)
	}
	return strings.Join(run, "")
}
