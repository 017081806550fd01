package workload

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// wsTok is a whitespace tokenizer: each run of non-space characters is a
// token, and Decode joins tokens with single spaces.
type wsTok struct {
	mu    sync.Mutex
	ids   map[string]int
	words []string
}

func (t *wsTok) Name() string { return "whitespace" }

func (t *wsTok) Encode(text string) []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ids == nil {
		t.ids = map[string]int{}
	}
	var out []int
	for _, w := range strings.Fields(text) {
		id, ok := t.ids[w]
		if !ok {
			id = len(t.words)
			t.ids[w] = id
			t.words = append(t.words, w)
		}
		out = append(out, id)
	}
	return out
}

func (t *wsTok) Decode(ids []int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	ws := make([]string, len(ids))
	for k, id := range ids {
		ws[k] = t.words[id]
	}
	return strings.Join(ws, " ")
}

func (t *wsTok) Count(text string) int { return len(strings.Fields(text)) }

// mergeTok is a byte-level tokenizer whose decoded cuts re-encode to other
// counts, as real ones do at times: runs of letters and digits (bytes of
// UTF-8 sequences included) are cut into pieces of up to 4 bytes, every
// other byte is a token of its own. Decode cleans up like Hugging Face's
// clean_up_tokenization_spaces: it drops a space before , . ! ? and
// trailing spaces (a cut after a space loses a token), and writes a rune
// cut between tokens as U+FFFD (which re-encodes to 3 bytes).
type mergeTok struct {
	mu     sync.Mutex
	ids    map[string]int
	pieces []string
}

func (t *mergeTok) Name() string { return "merge" }

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func mergePieces(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		if !isWordByte(text[i]) {
			out = append(out, text[i:i+1])
			i++
			continue
		}
		j := i
		for j < len(text) && j-i < 4 && isWordByte(text[j]) {
			j++
		}
		out = append(out, text[i:j])
		i = j
	}
	return out
}

func (t *mergeTok) Encode(text string) []int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ids == nil {
		t.ids = map[string]int{}
	}
	var out []int
	for _, p := range mergePieces(text) {
		id, ok := t.ids[p]
		if !ok {
			id = len(t.pieces)
			t.ids[p] = id
			t.pieces = append(t.pieces, p)
		}
		out = append(out, id)
	}
	return out
}

func (t *mergeTok) Decode(ids []int) string {
	t.mu.Lock()
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(t.pieces[id])
	}
	t.mu.Unlock()
	s := b.String()
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	for _, p := range []string{",", ".", "!", "?"} {
		s = strings.ReplaceAll(s, " "+p, p)
	}
	return strings.TrimRight(s, " ")
}

func (t *mergeTok) Count(text string) int { return len(mergePieces(text)) }
