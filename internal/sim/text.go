package sim

import (
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
)

// The simulator's tokenizer is one token per whitespace-separated word, and
// every generated token is a space followed by a word. So the text it sends
// always agrees with the token counts it reports, and a client that counts
// words counts tokens exactly.

// vocab holds the words generated tokens are drawn from; a token's id is
// its index. It is built on first use: a command that runs no simulator
// (tokperf version, report, a run against a real server) starts without it.
var vocab = sync.OnceValue(func() []string {
	onsets := []string{"b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "st", "tr"}
	vowels := []string{"a", "e", "i", "o", "u", "ai", "ou"}
	codas := []string{"", "n", "r", "s", "l"}
	var syl []string
	for _, o := range onsets {
		for _, v := range vowels {
			for _, c := range codas {
				syl = append(syl, o+v+c)
			}
		}
	}
	r := rand.New(rand.NewPCG(7, 11))
	seen := map[string]bool{}
	var out []string
	for len(out) < 4096 {
		n := 1 + r.IntN(3)
		var b strings.Builder
		for range n {
			b.WriteString(syl[r.IntN(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
})

// oneTokenWords are the words of vocab that count keeps as one token
// after a space, so that output drawn from them is as many tokens by count
// as the simulator says it generated; nil when fewer than 64 qualify.
func oneTokenWords(count func(string) int) []string {
	var out []string
	for _, w := range vocab() {
		if count(" "+w) == 1 && count(" "+w+" "+w) == 2 {
			out = append(out, w)
		}
	}
	if len(out) < 64 {
		return nil
	}
	return out
}

// countTokens is the simulator's tokenizer: the number of words.
func countTokens(s string) int { return len(strings.Fields(s)) }

// textGen produces a request's output tokens from its own seeded source, so
// a greedy request for the same prompt always gets the same text.
type textGen struct {
	r      *rand.Rand
	answer []string // words to say first (an exact answer)
	words  []string // the words tokens are drawn from (nil: vocab)
}

func newTextGen(key uint64) *textGen { return &textGen{r: rand.New(rand.NewPCG(key, 0x7e47))} }

// next appends n tokens' text to b and their ids to ids.
func (g *textGen) next(b []byte, ids []int, n int) ([]byte, []int) {
	for range n {
		if len(g.answer) > 0 {
			b = append(b, ' ')
			b = append(b, g.answer[0]...)
			ids = append(ids, 0)
			g.answer = g.answer[1:]
			continue
		}
		words := g.words
		if words == nil {
			words = vocab()
		}
		id := g.r.IntN(len(words))
		b = append(b, ' ')
		b = append(b, words[id]...)
		ids = append(ids, id)
	}
	return b, ids
}

// outputLength draws where the model stops on its own: each token ends the
// output with probability p (a geometric length), never past maxTokens.
func outputLength(key uint64, p float64, maxTokens int) int {
	if p <= 0 {
		return maxTokens
	}
	r := rand.New(rand.NewPCG(key, 0xe05))
	u := 1 - r.Float64() // (0, 1]
	n := int(math.Ceil(math.Log(u) / math.Log1p(-p)))
	return min(max(n, 1), maxTokens)
}

// requestKey makes the seed of a request's output: the prompt and sampling
// seed for greedy or seeded sampling, a fresh draw otherwise.
func requestKey(profileSeed int64, prompt string, temperature float64, seed int64, fresh func() uint64) uint64 {
	if temperature > 0 && seed == 0 {
		return fresh()
	}
	h := fnv.New64a()
	h.Write([]byte(prompt))
	return h.Sum64() ^ uint64(profileSeed)*0x9e3779b97f4a7c15 ^ uint64(seed)
}
