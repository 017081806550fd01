package tokenizer

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dlclark/regexp2/v2"
)

// splitBoth returns the spans of s by the hand-written matcher of pattern and by regexp2.
func splitBoth(t testing.TB, pattern, s string) (fast, slow []span) {
	p := &splitPre{re: splitRegexps[pattern], fast: fastSplits[pattern]}
	if p.fast == nil {
		t.Fatalf("no fast split for %q", pattern)
	}
	for i := 0; i < len(s); {
		end := p.fast(s, i)
		if end <= i {
			t.Fatalf("%q: match at %d ends at %d", s, i, end)
		}
		fast = append(fast, span{i, end, true})
		i = end
	}
	slow, ok := p.matches(new(scratch), s, nil)
	if !ok {
		t.Fatalf("%q: regexp2 failed", s)
	}
	return fast, slow
}

var splitRegexps = map[string]*regexp2.Regexp{
	llama3Pattern: regexp2.MustCompile(llama3Pattern, regexp2.OptionMaxBacktrackingStackSize(-1)),
	qwen2Pattern:  regexp2.MustCompile(qwen2Pattern, regexp2.OptionMaxBacktrackingStackSize(-1)),
	o200kPattern:  regexp2.MustCompile(o200kPattern, regexp2.OptionMaxBacktrackingStackSize(-1)),
}

var splitSeeds = []string{
	"", "a", " ", "  ", "\n", " \n \n \n", "\n   \n\t\n", "a  b", "a \u00a0b", "x\t\t\ty", "it's 'S 'LL 'Re 'ſ 'x'",
	"12345 1,234.5 ١٢٣ ½", " (hello) [x] !!!\r\n\r\n", "\x85a\u2028b\u3000c", "e\u0301 \u0301a",
	"\xff\xfe broken \xc3", "HTTPServer getHTTP iPhone ǅungla Ǆ ʰʰ 中文 한국어 \u0301\u0301 a\u0301b A\u0301 DON'T don't I'M ʰ'll", "👨‍👩‍👧‍👦 🇺🇸 1️⃣", "end   ", "'", " '", "\r\r\n \r",
}

func TestFastSplit(t *testing.T) {
	t.Parallel()
	texts := slices.Clone(splitSeeds)
	for _, g := range readGolden(t) {
		texts = append(texts, g.Text)
	}
	for _, pattern := range []string{llama3Pattern, qwen2Pattern, o200kPattern} {
		for _, s := range texts {
			if fast, slow := splitBoth(t, pattern, s); !slices.Equal(fast, slow) {
				t.Errorf("%q:\n fast %v\n re   %v", s, fast, slow)
			}
		}
	}
}

func FuzzFastSplit(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, pattern := range []string{llama3Pattern, qwen2Pattern, o200kPattern} {
			if fast, slow := splitBoth(t, pattern, s); !slices.Equal(fast, slow) {
				t.Fatalf("%q:\n fast %v\n re   %v", s, fast, slow)
			}
		}
	})
}

// TestFastSplitRandom compares the matchers on short strings drawn from characters of every
// class the patterns tell apart, which byte-level fuzzing reaches only slowly.
func TestFastSplitRandom(t *testing.T) {
	t.Parallel()
	chars := []rune("aZsStTlLeErRvVmMdDſ'' /\r\n\t\u00a0\u3000\u2028\x85!?.-_1٣½Ⅻǅʰ中\u0301\u0903\u20dd😀\ufffd")
	rng := rand.New(rand.NewPCG(1, 2))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for range n {
		b := make([]rune, 1+rng.IntN(10))
		for i := range b {
			b[i] = chars[rng.IntN(len(chars))]
		}
		s := string(b)
		for _, pattern := range []string{llama3Pattern, qwen2Pattern, o200kPattern} {
			if fast, slow := splitBoth(t, pattern, s); !slices.Equal(fast, slow) {
				t.Fatalf("%q:\n fast %v\n re   %v", s, fast, slow)
			}
		}
	}
}
