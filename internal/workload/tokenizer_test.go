package workload

import (
	"strings"
	"testing"
)

// TestMergeTokMerges shows that the fake does what the fix-up is for: the
// plain cut-and-decode gives another count than asked.
func TestMergeTokMerges(t *testing.T) {
	t.Parallel()
	tok := &mergeTok{}
	text := prose(1, 0, 300)
	ids := tok.Encode(text)
	fewer, more := 0, 0
	for n := 1; n < 200; n++ {
		switch c := tok.Count(tok.Decode(ids[:n])); {
		case c < n:
			fewer++
		case c > n:
			more++
		}
	}
	if fewer == 0 {
		t.Error("no cut re-encoded to fewer tokens: the fake does not exercise the fix-up")
	}
	ids = tok.Encode("café naïve crème brûlée")
	for n := 1; n < len(ids); n++ {
		if tok.Count(tok.Decode(ids[:n])) > n {
			more++
		}
	}
	if more == 0 {
		t.Error("no cut re-encoded to more tokens (a rune split between tokens)")
	}
}

func TestFit(t *testing.T) {
	t.Parallel()
	ascii := prose(3, 1, 2000)
	accents := strings.Repeat("Le café naïve, la crème brûlée et l'été à Zürich. ", 60)
	for _, c := range []struct {
		name string
		tok  Tokenizer
		text string
	}{
		{"whitespace", &wsTok{}, ascii},
		{"merge", &mergeTok{}, ascii},
		{"merge/utf8", &mergeTok{}, accents},
		{"whitespace/utf8", &wsTok{}, accents},
	} {
		t.Run(c.name, func(t *testing.T) {
			total := c.tok.Count(c.text)
			for _, n := range []int{1, 2, 3, 5, 8, 13, 64, 100, 127, 128, 500, 511, 512, 513, total - 1} {
				s, got := fit(c.tok, c.text, n)
				if got != n || c.tok.Count(s) != n {
					t.Errorf("fit to %d: reported %d, counted %d: %q", n, got, c.tok.Count(s), s[max(len(s)-30, 0):])
				}
			}
			s, got := fit(c.tok, c.text, total+10)
			if s != c.text || got != total {
				t.Errorf("fit past the end: %d tokens, want the whole text (%d)", got, total)
			}
		})
	}
}

// jumpTok counts "xy" as one token but "x" and "y" alone as one each and
// decodes "x" to "" so no cut of the ids lands on an odd count: fit must
// find one by adding text.
type jumpTok struct{ mergeTok }

func (t *jumpTok) Count(text string) int {
	return len(mergePieces(strings.ReplaceAll(text, "xx", "xxxxxxxx")))
}

func TestFitFallback(t *testing.T) {
	t.Parallel()
	tok := &jumpTok{}
	text := strings.Repeat("xx ", 40)
	for n := 1; n < 30; n++ {
		s, got := fit(tok, text, n)
		if tok.Count(s) != got {
			t.Errorf("fit to %d: reported %d, counted %d", n, got, tok.Count(s))
		}
		if got > n {
			t.Errorf("fit to %d gave more: %d", n, got)
		}
	}
}
