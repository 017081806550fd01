// Package check holds tokperf's smoke and accuracy checks: a built-in set
// of questions with exact answers generated from a seed (arithmetic and
// number words), their scoring, and the tests of sensible output. A fast
// configuration that answers wrongly must never win.
//
//	qs := check.Questions(1, 40)
//	ok := qs[0].Correct(outputText)
package check

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Question is a prompt with one exact answer.
type Question struct {
	Kind   string // add, mul, words, number
	Prompt string
	Answer string
}

// Questions generates n questions, the same for the same seed.
func Questions(seed int64, n int) []Question {
	r := rand.New(rand.NewPCG(uint64(seed), 0xc4ec))
	out := make([]Question, 0, n)
	for i := range n {
		switch i % 4 {
		case 0:
			a, b := 10+r.IntN(90), 10+r.IntN(90)
			out = append(out, Question{"add", fmt.Sprintf("What is %d + %d? Answer with the number only.", a, b), strconv.Itoa(a + b)})
		case 1:
			a, b := 2+r.IntN(18), 2+r.IntN(18)
			out = append(out, Question{"mul", fmt.Sprintf("What is %d times %d? Answer with the number only.", a, b), strconv.Itoa(a * b)})
		case 2:
			v := 1 + r.IntN(999)
			out = append(out, Question{"words", fmt.Sprintf("Write %d in words, in lowercase, without 'and'.", v), Words(v)})
		default:
			v := 1 + r.IntN(999)
			out = append(out, Question{"number", fmt.Sprintf("Which number is written '%s'? Answer with digits only.", Words(v)), strconv.Itoa(v)})
		}
	}
	return out
}

var ones = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
	"twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"}
var tens = []string{"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}

// Words writes 0 ≤ n < 1000 in English words without "and"
// (347: "three hundred forty-seven").
func Words(n int) string {
	var parts []string
	if n >= 100 {
		parts = append(parts, ones[n/100], "hundred")
		n %= 100
		if n == 0 {
			return strings.Join(parts, " ")
		}
	}
	switch {
	case n < 20:
		parts = append(parts, ones[n])
	case n%10 == 0:
		parts = append(parts, tens[n/10])
	default:
		parts = append(parts, tens[n/10]+"-"+ones[n%10])
	}
	return strings.Join(parts, " ")
}

// ParseWords reads what Words writes; false when it cannot.
func ParseWords(s string) (int, bool) {
	n, seen := 0, false
	for _, w := range strings.Fields(strings.ToLower(s)) {
		if w == "hundred" {
			if n == 0 || n > 9 {
				return 0, false
			}
			n *= 100
			continue
		}
		v, ok := wordValue(w)
		if !ok {
			return 0, false
		}
		n += v
		seen = true
	}
	return n, seen
}

func wordValue(w string) (int, bool) {
	if t, o, ok := strings.Cut(w, "-"); ok {
		a, okA := index(tens, t)
		b, okB := index(ones, o)
		return a*10 + b, okA && okB && a >= 2 && b > 0 && b < 10
	}
	if v, ok := index(ones, w); ok {
		return v, true
	}
	if v, ok := index(tens, w); ok && v >= 2 {
		return v * 10, true
	}
	return 0, false
}

func index(list []string, w string) (int, bool) {
	for i, s := range list {
		if s == w && s != "" {
			return i, true
		}
	}
	return 0, false
}

var firstNumber = regexp.MustCompile(`-?\d+`)

// Correct scores an output: for a numeric answer the first number in the
// output must be it; for words, the output must start with them (case and
// surrounding punctuation aside).
func (q Question) Correct(output string) bool {
	out := strings.ToLower(strings.TrimSpace(output))
	if q.Kind == "words" {
		out = strings.TrimLeft(out, "\"'` ")
		if !strings.HasPrefix(out, q.Answer) {
			return false
		}
		rest := out[len(q.Answer):]
		return rest == "" || !unicode.IsLetter(rune(rest[0])) && rest[0] != '-'
	}
	m := firstNumber.FindString(out)
	return m == q.Answer
}

// Problems lists what is wrong with an output that should be sensible
// text: empty, unprintable, or degenerate repetition, of words or of a
// few characters.
func Problems(text string) []string {
	var out []string
	if strings.TrimSpace(text) == "" {
		return []string{"empty output"}
	}
	if !utf8.ValidString(text) {
		out = append(out, "invalid UTF-8")
	}
	bad := 0
	for _, r := range text {
		if unicode.IsControl(r) && r != '\n' && r != '\t' && r != '\r' {
			bad++
		}
	}
	if bad > 0 {
		out = append(out, fmt.Sprintf("%d control characters", bad))
	}
	if w := strings.Fields(text); len(w) >= 8 {
		counts := map[string]int{}
		top := 0
		for _, x := range w {
			counts[x]++
			top = max(top, counts[x])
		}
		if float64(top) > 0.5*float64(len(w)) {
			out = append(out, fmt.Sprintf("degenerate: one word is %d of %d", top, len(w)))
		} else if len(counts) < len(w)/5 {
			out = append(out, fmt.Sprintf("degenerate: %d distinct words in %d", len(counts), len(w)))
		}
	}
	if len(out) == 0 || !strings.HasPrefix(out[len(out)-1], "degenerate") {
		if unit, reps := repeated(text); reps > 0 {
			out = append(out, fmt.Sprintf("degenerate: %q repeated %d times", unit, reps))
		} else if distinct, all := pieces(text); all > 0 && float64(distinct) < minPieceShare*float64(all) {
			out = append(out, fmt.Sprintf("degenerate: %d distinct %d-character pieces in %d (a few units over and over)", distinct, pieceLen, all))
		}
	}
	return out
}

// Limits of the few-units test: text of minPieceText characters or more
// whose pieces of pieceLen characters are fewer than minPieceShare
// distinct. Two or three units alternating in no fixed order
// ("horahoraවhoraව…", "ව Venවauthentication…") have no period for
// repeated to find, and no spaces for the word counter, but only a few
// dozen distinct pieces: 10–27% of them in 170 characters, where prose
// has 95% or more and code 70%.
const (
	pieceLen      = 6
	minPieceText  = 64
	minPieceShare = 0.35
)

// pieces counts the distinct pieces of pieceLen characters of text and
// all of them; all is 0 for text shorter than minPieceText.
func pieces(text string) (distinct, all int) {
	rs := []rune(text)
	if len(rs) < minPieceText {
		return 0, 0
	}
	seen := map[string]struct{}{}
	for i := 0; i+pieceLen <= len(rs); i++ {
		seen[string(rs[i:i+pieceLen])] = struct{}{}
	}
	return len(seen), len(rs) - pieceLen + 1
}

// Limits of the character-level repetition test: a unit of up to
// maxPeriod characters repeated at least minRepeats times, over at least
// half the text and at least minRepeatRun characters. A word counter does
// not see "horahorahora…" or "WHWHWH…": it is one word.
const (
	maxPeriod    = 32
	minRepeats   = 6
	minRepeatRun = 20
)

// repeated finds the longest stretch of text that is a short unit
// repeated, and returns the unit and how many times it repeats when that
// stretch makes the text degenerate; reps is 0 when it does not.
func repeated(text string) (unit string, reps int) {
	rs := []rune(text)
	bestLen, bestP, bestEnd := 0, 0, 0
	for p := 1; p <= maxPeriod && p < len(rs); p++ {
		run := 0 // runes i with rs[i] == rs[i-p], in a row
		for i := p; i < len(rs); i++ {
			if rs[i] != rs[i-p] {
				run = 0
				continue
			}
			run++
			if run+p > bestLen {
				bestLen, bestP, bestEnd = run+p, p, i+1
			}
		}
	}
	if bestP == 0 || bestLen < minRepeatRun || bestLen/bestP < minRepeats || 2*bestLen < len(rs) {
		return "", 0
	}
	start := bestEnd - bestLen
	return string(rs[start : start+bestP]), bestLen / bestP
}

// Wilson is the 95% Wilson score interval of a proportion k/n.
func Wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	p, nf := float64(k)/float64(n), float64(n)
	d := 1 + z*z/nf
	c := (p + z*z/(2*nf)) / d
	h := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / d
	return math.Max(0, c-h), math.Min(1, c+h)
}

// Divergence is where two outputs first differ, in words; -1 when equal.
func Divergence(a, b string) int {
	wa, wb := strings.Fields(a), strings.Fields(b)
	for i := range min(len(wa), len(wb)) {
		if wa[i] != wb[i] {
			return i
		}
	}
	if len(wa) == len(wb) {
		return -1
	}
	return min(len(wa), len(wb))
}
