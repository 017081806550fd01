package workload

import (
	_ "embed"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// wordsFile is a list of common English words written for tokperf, most
// frequent first (roughly): rank decides how often a word is drawn.
//
//go:embed words.txt
var wordsFile string

// wordTable is the embedded word list: vocab in rank order; cdf[k] is the
// cumulative Zipf–Mandelbrot weight of ranks 0..k, normalised to end at 1;
// ranks draws a rank by the weights of cdf in constant time.
type wordTable struct {
	vocab []string
	cdf   []float64
	ranks alias
}

// table is the word table, built on first use: a command that makes no
// text (tokperf version, report) starts without it.
var table = sync.OnceValue(func() *wordTable {
	v, c := buildVocab()
	return &wordTable{vocab: v, cdf: c, ranks: newAlias(c)}
})

// alias is Vose's alias table: rank k is kept with probability keep[k],
// else replaced by other[k]; so drawing one takes two random numbers, not
// a search.
type alias struct {
	keep  []float64
	other []int32
}

func newAlias(cdf []float64) alias {
	n := len(cdf)
	a := alias{keep: make([]float64, n), other: make([]int32, n)}
	scaled := make([]float64, n)
	var small, large []int
	prev := 0.0
	for k, c := range cdf {
		scaled[k] = (c - prev) * float64(n)
		prev = c
		if scaled[k] < 1 {
			small = append(small, k)
		} else {
			large = append(large, k)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		a.keep[s], a.other[s] = scaled[s], int32(l)
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, k := range append(small, large...) {
		a.keep[k], a.other[k] = 1, int32(k)
	}
	return a
}

func (a alias) draw(r *rand.Rand) int {
	k := r.IntN(len(a.keep))
	if r.Float64() < a.keep[k] {
		return k
	}
	return int(a.other[k])
}

// zipfQ flattens the head of the distribution: with weights 1/(rank+q) the
// commonest word ("the") takes about 4% of the words, as in English prose,
// where a plain 1/rank over this list would give it 12%.
const zipfQ = 2.7

func buildVocab() ([]string, []float64) {
	var ws []string
	for line := range strings.Lines(wordsFile) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		ws = append(ws, strings.Fields(line)...)
	}
	c := make([]float64, len(ws))
	sum := 0.0
	for k := range ws {
		sum += 1 / (float64(k+1) + zipfQ)
		c[k] = sum
	}
	for k := range c {
		c[k] /= sum
	}
	return ws, c
}

// textGen writes English-looking prose for one (seed, index): words drawn
// from vocab by a Zipf-like law, sentences of varying length with commas,
// capitals and a closing mark, now and then quoted speech, a remark in
// parentheses, a hyphenated compound, a possessive or a number, and
// paragraphs of a few sentences. Its output depends on the seed and index
// only.
type textGen struct {
	r        *rand.Rand
	left     int  // words left in the current sentence
	sentence int  // sentences left in the current paragraph
	started  bool // something was written: the next word needs a separator
	quoted   bool // the sentence is quoted speech
	paren    int  // words left inside parentheses; 0: none open
}

func newTextGen(seed int64, stream uint64) *textGen {
	return &textGen{r: rand.New(rand.NewPCG(uint64(seed), stream))}
}

// word draws one word by rank.
func (g *textGen) word() string {
	t := table()
	return t.vocab[t.ranks.draw(g.r)]
}

// contentWord draws a word past the commonest hundred (mostly function
// words), for compounds and possessives.
func (g *textGen) contentWord() string {
	t := table()
	for {
		if k := t.ranks.draw(g.r); k >= 100 {
			return t.vocab[k]
		}
	}
}

// number is one of the shapes numbers take in prose.
func (g *textGen) number() string {
	r := g.r
	switch k := r.IntN(10); {
	case k < 3:
		return strconv.Itoa(1900 + r.IntN(131)) // a year
	case k < 6:
		return strconv.Itoa(2 + r.IntN(98))
	case k < 7:
		return strconv.Itoa(100+r.IntN(900)) + "%"
	case k < 8:
		return strconv.Itoa(1+r.IntN(99)) + "," + strconv.Itoa(100+r.IntN(900))
	case k < 9:
		return strconv.Itoa(r.IntN(100)) + "." + strconv.Itoa(r.IntN(10))
	default:
		return strconv.Itoa(r.IntN(100)) + "%"
	}
}

// sentenceWords draws a sentence length: log-normal around 14 words, as in
// edited English prose, from 3 to 45.
func (g *textGen) sentenceWords() int {
	n := int(math.Round(14 * math.Exp(0.45*g.r.NormFloat64())))
	return min(max(n, 3), 45)
}

// write appends n words of prose to b (a compound or a number counts as
// one word).
func (g *textGen) write(b *strings.Builder, n int) {
	r := g.r
	for range n {
		first := g.left == 0
		if first {
			g.left = g.sentenceWords()
			if g.sentence == 0 {
				g.sentence = 2 + r.IntN(6)
				if g.started {
					b.WriteString("\n\n")
				}
			} else {
				b.WriteByte(' ')
			}
			g.quoted = r.IntN(100) < 6
			if g.quoted {
				b.WriteByte('"')
			}
		} else {
			b.WriteByte(' ')
		}
		g.started = true
		if !first && g.paren == 0 && g.left > 4 && r.IntN(100) < 2 {
			g.paren = 2 + r.IntN(3)
			b.WriteByte('(')
		}
		var w string
		switch x := r.IntN(1000); {
		case x < 25 && !first:
			w = g.number()
		case x < 55:
			w = capital(g.word()) // a name, or a word of a title
		case x < 80:
			w = g.contentWord() + "-" + g.contentWord()
		case x < 100:
			w = g.contentWord() + "'s"
		default:
			w = g.word()
		}
		if first {
			w = capital(w)
		}
		b.WriteString(w)
		g.left--
		if g.paren > 0 {
			if g.paren--; g.paren == 0 || g.left == 0 {
				g.paren = 0
				b.WriteByte(')')
			}
		}
		switch {
		case g.left == 0:
			g.sentence--
			switch x := r.IntN(100); {
			case x < 86:
				b.WriteByte('.')
			case x < 95:
				b.WriteByte('?')
			default:
				b.WriteByte('!')
			}
			if g.quoted {
				b.WriteByte('"')
			}
		case g.left > 1:
			switch x := r.IntN(1000); {
			case x < 80:
				b.WriteByte(',')
			case x < 90:
				b.WriteByte(';')
			case x < 96:
				b.WriteByte(':')
			}
		}
	}
}

func capital(w string) string {
	if w == "" || w[0] < 'a' || w[0] > 'z' {
		return w
	}
	return string(w[0]-'a'+'A') + w[1:]
}

// EstimateTokens guesses how many tokens text is without a tokenizer: each
// run of letters is one token per 8 letters begun, each run of digits one
// per 3 digits begun (as Llama 3 splits numbers), each other visible
// character one, and each character of a CJK script one. Spaces count
// nothing. On this package's prose it is about 5% above the counts of
// OpenAI's cl100k_base and o200k_base; on other text it can be further
// off, so a count from it is marked record.SourceEstimate.
func EstimateTokens(text string) int {
	n, _ := cutEstimate(text, -1)
	return n
}

// cutEstimate counts text's estimated tokens (EstimateTokens) and, when
// limit ≥ 0, returns the byte length of its longest prefix of at most limit
// tokens, without trailing spaces. The count stops at limit+1.
func cutEstimate(text string, limit int) (count, cut int) {
	const (
		other = iota
		letter
		digit
	)
	kind, run := other, 0
	for i, c := range text {
		var k, per int
		switch {
		case c < utf8.RuneSelf:
			switch {
			case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
				k, per = letter, 8
			case '0' <= c && c <= '9':
				k, per = digit, 3
			case c == ' ' || '\t' <= c && c <= '\r':
				kind, run = other, 0
				continue
			}
		case c >= 0x2e80 && !unicode.IsSpace(c):
			k, per = other, 0 // CJK and beyond: a token each
		case unicode.IsLetter(c):
			k, per = letter, 8
		case unicode.IsDigit(c):
			k, per = digit, 3
		case unicode.IsSpace(c):
			kind, run = other, 0
			continue
		}
		starts := true
		switch {
		case k == other:
			kind, run = other, 0
		case k == kind:
			starts = run%per == 0
			run++
		default:
			kind, run = k, 1
		}
		if !starts {
			continue
		}
		count++
		if limit >= 0 && count > limit {
			return count, len(strings.TrimRightFunc(text[:i], unicode.IsSpace))
		}
	}
	return count, len(text)
}

// wordStart is where the first whole word of b starts, b being a window
// cut from the middle of a text: past UTF-8 continuation bytes, the rest of
// the word cut, and the spaces after it.
func wordStart(b []byte) int {
	off := 0
	for off < len(b) && !utf8.RuneStart(b[off]) {
		off++
	}
	for off < len(b) {
		c, n := utf8.DecodeRune(b[off:])
		if unicode.IsSpace(c) {
			break
		}
		off += n
	}
	for off < len(b) {
		c, n := utf8.DecodeRune(b[off:])
		if !unicode.IsSpace(c) {
			break
		}
		off += n
	}
	return off
}

// fullRunes is the length of b without a UTF-8 sequence cut at its end.
func fullRunes(b []byte) int {
	for k := len(b) - 1; k >= 0 && k >= len(b)-utf8.UTFMax; k-- {
		if utf8.RuneStart(b[k]) {
			if !utf8.FullRune(b[k:]) {
				return k
			}
			break
		}
	}
	return len(b)
}
