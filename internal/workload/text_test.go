package workload

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
)

func prose(seed int64, i, words int) string {
	var b strings.Builder
	newTextGen(seed, uint64(i)).write(&b, words)
	return b.String()
}

func TestVocab(t *testing.T) {
	t.Parallel()
	if len(table().vocab) < 2000 {
		t.Errorf("vocabulary has %d words, want a few thousand", len(table().vocab))
	}
	seen := map[string]bool{}
	for _, w := range table().vocab {
		if seen[w] {
			t.Errorf("%q twice in words.txt", w)
		}
		seen[w] = true
		for _, c := range w {
			if c < 'a' || c > 'z' {
				t.Errorf("%q: want lower-case ASCII letters", w)
				break
			}
		}
	}
	if table().cdf[len(table().cdf)-1] != 1 {
		t.Errorf("cdf ends at %v, want 1", table().cdf[len(table().cdf)-1])
	}
}

func TestTextDeterministic(t *testing.T) {
	t.Parallel()
	a, b := prose(7, 3, 500), prose(7, 3, 500)
	if a != b {
		t.Fatal("same seed and index gave different text")
	}
	if prose(7, 4, 500) == a || prose(8, 3, 500) == a {
		t.Fatal("another index or seed gave the same text")
	}
	// Writing in pieces continues the same text.
	var sb strings.Builder
	g := newTextGen(7, 3)
	g.write(&sb, 200)
	g.write(&sb, 300)
	if sb.String() != a {
		t.Fatal("text written in two pieces differs from text written at once")
	}
}

// TestTextLooksLikeText checks the shape of the prose: a Zipf-like head,
// sentences of varying length that start with a capital and end with a
// mark, paragraphs, commas and numbers.
func TestTextLooksLikeText(t *testing.T) {
	t.Parallel()
	s := prose(1, 0, 50000)
	fields := strings.Fields(s)
	if len(fields) != 50000 {
		t.Fatalf("%d words, want 50000", len(fields))
	}
	freq := map[string]int{}
	numbers, commas := 0, 0
	for _, f := range fields {
		w := strings.ToLower(strings.TrimRight(f, ".,?!"))
		freq[w]++
		if strings.HasSuffix(f, ",") {
			commas++
		}
		if unicode.IsDigit(rune(f[0])) {
			numbers++
		}
	}
	share := func(w string) float64 { return float64(freq[w]) / float64(len(fields)) }
	if s := share("the"); s < 0.03 || s > 0.06 {
		t.Errorf(`"the" is %.3f of the words, want 0.03 to 0.06 as in English`, s)
	}
	if share("the") < 1.3*share("and") || share("and") < share("time") {
		t.Errorf("frequencies do not fall with rank: the %.4f, and %.4f, time %.4f", share("the"), share("and"), share("time"))
	}
	if len(freq) < 1500 {
		t.Errorf("%d distinct words in 50000, want a long tail (≥ 1500)", len(freq))
	}
	if numbers < 300 || numbers > 1500 {
		t.Errorf("%d numbers in 50000 words, want about 1%%", numbers)
	}
	if commas < 1000 {
		t.Errorf("%d commas in 50000 words, want some", commas)
	}
	paragraphs := strings.Split(s, "\n\n")
	if len(paragraphs) < 300 {
		t.Errorf("%d paragraphs in 50000 words, want ≥ 300", len(paragraphs))
	}
	lengths := map[int]int{}
	sentences, quoted := 0, 0
	for _, p := range paragraphs {
		words := 0
		for _, f := range strings.Fields(p) {
			if words == 0 && f[0] == '"' {
				quoted++
				f = f[1:]
			}
			if words == 0 && !unicode.IsUpper(rune(f[0])) {
				t.Fatalf("sentence starts with %q, want a capital", f)
			}
			words++
			f = strings.TrimRight(f, `")`)
			if last := f[len(f)-1]; last == '.' || last == '?' || last == '!' {
				lengths[words]++
				sentences++
				words = 0
			}
		}
		if words != 0 && p != paragraphs[len(paragraphs)-1] {
			t.Fatalf("paragraph ends inside a sentence: %q", p[max(len(p)-40, 0):])
		}
	}
	if len(lengths) < 20 {
		t.Errorf("only %d distinct sentence lengths, want varied sentences", len(lengths))
	}
	if quoted < sentences/50 || quoted > sentences/8 {
		t.Errorf("%d of %d sentences quoted, want a few", quoted, sentences)
	}
	for _, mark := range []string{"(", ")", ";", ":", "'s ", "-"} {
		if k := strings.Count(s, mark); k < 50 {
			t.Errorf("%q %d times in 50000 words, want some", mark, k)
		}
	}
	if strings.Count(s, "(") != strings.Count(s, ")") {
		t.Errorf("%d ( and %d )", strings.Count(s, "("), strings.Count(s, ")"))
	}
	if mean := 50000.0 / float64(sentences); mean < 10 || mean > 20 {
		t.Errorf("mean sentence length %.1f words, want 10 to 20", mean)
	}
}

func TestEstimateTokens(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, text string
		want       int
	}{
		{"empty", "", 0},
		{"spaces", "  \n\t ", 0},
		{"words", "the cat sat", 3},
		{"punctuation", "Hello, world!", 4},
		{"long word", "internationalization", 3}, // 20 letters: 8+8+4
		{"eight letters", "abcdefgh", 1},
		{"digits", "1234567", 3},
		{"mixed", "r12 ok", 3},
		{"percent", "12%", 2},
		{"cjk", "日本語", 3},
		{"accents", "café naïve", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := EstimateTokens(c.text); got != c.want {
				t.Errorf("EstimateTokens(%q) = %d, want %d", c.text, got, c.want)
			}
		})
	}
}

// TestCutEstimate checks that a cut at n estimated tokens is exactly n.
func TestCutEstimate(t *testing.T) {
	t.Parallel()
	s := prose(2, 0, 400) + " 1234567 internationalization 日本語 end"
	total := EstimateTokens(s)
	for n := 0; n <= total; n++ {
		c, cut := cutEstimate(s, n)
		if n < total && c != n+1 {
			t.Fatalf("cutEstimate(%d) stopped at count %d, want %d", n, c, n+1)
		}
		if got := EstimateTokens(s[:cut]); got != n {
			t.Fatalf("cut at %d tokens has %d: %q", n, got, s[max(cut-30, 0):cut])
		}
	}
}

func TestWordStart(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"lo world", "world"},
		{"\xa9 next", "next"},
		{" word", "word"},
		{"nospace", ""},
	} {
		if got := c.in[wordStart([]byte(c.in)):]; got != c.want {
			t.Errorf("wordStart(%q) leaves %q, want %q", c.in, got, c.want)
		}
	}
	if got := fullRunes([]byte("ab\xc3")); got != 2 {
		t.Errorf("fullRunes cut rune: %d, want 2", got)
	}
	if got := fullRunes([]byte("abé")); got != 4 {
		t.Errorf("fullRunes whole: %d, want 4", got)
	}
}

// TestAlias checks that the alias table draws ranks with the weights of cdf.
func TestAlias(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	const n = 1_000_000
	got := make([]int, len(table().vocab))
	for range n {
		got[table().ranks.draw(r)]++
	}
	prev := 0.0
	for k, c := range table().cdf {
		want := (c - prev) * n
		prev = c
		// 6 standard deviations of a binomial count, plus one.
		if d := math.Abs(float64(got[k]) - want); d > 6*math.Sqrt(want)+1 {
			t.Fatalf("rank %d drawn %d times, want %.0f", k, got[k], want)
		}
	}
}
