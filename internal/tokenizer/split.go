package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The split patterns of Llama 3, Qwen 2/3, cl100k_base and o200k_base, matched by hand:
// regexp2 spends most of an encode matching them (see BenchmarkEncode), and these functions
// give the same matches (TestFastSplit and FuzzFastSplit compare the two).
const (
	o200kPattern  = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2Pattern  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// fastSplits maps each pattern with a hand-written matcher to its matcher: the end of the
// match that starts at s[i]. Every position starts a match for these patterns, so the matches
// tile the text.
var fastSplits = map[string]func(s string, i int) int{
	llama3Pattern: func(s string, i int) int { return llamaMatch(s, i, 3) },
	qwen2Pattern:  func(s string, i int) int { return llamaMatch(s, i, 1) },
	o200kPattern:  o200kMatch,
}

func isL(r rune) bool { return unicode.IsLetter(r) }
func isN(r rune) bool { return unicode.IsNumber(r) }

// isS is \s as regexp2 and Oniguruma read it: Unicode White_Space.
func isS(r rune) bool {
	if r < 0x80 {
		return r == ' ' || r >= '\t' && r <= '\r'
	}
	return r == 0x85 || unicode.In(r, unicode.Z)
}

func isOther(r rune) bool { return !isS(r) && !isL(r) && !isN(r) }

// at decodes the character at s[i]; n is 0 at the end of s.
func at(s string, i int) (r rune, n int) {
	if i >= len(s) {
		return 0, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// llamaMatch returns the end of llama3Pattern's match at s[i] (qwen2Pattern's when maxDigits
// is 1). Each step below is one alternative of the pattern, tried in its order.
func llamaMatch(s string, i, maxDigits int) int {
	c, n := at(s, i)
	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if c == '\'' {
		if e := contraction(s, i+1); e > 0 {
			return e
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if isL(c) {
		return run(s, i+n, isL)
	}
	if c != '\r' && c != '\n' && !isN(c) {
		if d, m := at(s, i+n); m > 0 && isL(d) {
			return run(s, i+n+m, isL)
		}
	}
	// \p{N}{1,maxDigits}
	if isN(c) {
		j := i + n
		for k := 1; k < maxDigits; k++ {
			d, m := at(s, j)
			if m == 0 || !isN(d) {
				break
			}
			j += m
		}
		return j
	}
	return otherOrSpace(s, i, c, false)
}

// otherOrSpace matches the alternatives that end both patterns, at s[i] holding c:
// ' ?[^\s\p{L}\p{N}]+[\r\n]*' (with slash: [\r\n/]*), then \s*[\r\n]+, \s+(?!\S) and \s+.
func otherOrSpace(s string, i int, c rune, slash bool) int {
	j := i
	if c == ' ' {
		j++
	}
	if d, m := at(s, j); m > 0 && isOther(d) {
		j = run(s, j+m, isOther)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n' || slash && s[j] == '/') {
			j++
		}
		return j
	}
	// c is whitespace: \s*[\r\n]+ ends after the run's last newline; else \s+(?!\S) leaves
	// the run's last character to the next match unless the run ends the text; else \s+.
	end, lastNL, last := i, -1, i
	for {
		d, m := at(s, end)
		if m == 0 || !isS(d) {
			break
		}
		if d == '\r' || d == '\n' {
			lastNL = end
		}
		last = end
		end += m
	}
	switch {
	case lastNL >= 0:
		return lastNL + 1
	case end == len(s) || last == i:
		return end
	}
	return last
}

// o200kMatch returns the end of o200kPattern's match at s[i]. Its words are an upper part (U:
// Lu Lt Lm Lo M) and a lower part (W: Ll Lm Lo M), optionally after one character that is no
// letter, number or newline (P), optionally followed by a contraction.
func o200kMatch(s string, i int) int {
	c, n := at(s, i)
	p := c != '\r' && c != '\n' && !isL(c) && !isN(c)
	// P?U*W+C? and then P?U+W*C?, each first with the P taken, then without.
	if p {
		if e := upperLower(s, i+n); e > 0 {
			return e
		}
	}
	if e := upperLower(s, i); e > 0 {
		return e
	}
	if p {
		if e := upperThenLower(s, i+n); e > 0 {
			return e
		}
	}
	if e := upperThenLower(s, i); e > 0 {
		return e
	}
	if isN(c) {
		j := i + n
		for range 2 {
			d, m := at(s, j)
			if m == 0 || !isN(d) {
				break
			}
			j += m
		}
		return j
	}
	return otherOrSpace(s, i, c, true)
}

var upperClass = []*unicode.RangeTable{unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M}
var lowerClass = []*unicode.RangeTable{unicode.Ll, unicode.Lm, unicode.Lo, unicode.M}

func isUpper(r rune) bool {
	if r < utf8.RuneSelf {
		return 'A' <= r && r <= 'Z'
	}
	return unicode.In(r, upperClass...)
}

func isLower(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z'
	}
	return unicode.In(r, lowerClass...)
}

// upperLower matches U*W+C? at s[j], or returns 0. U* is greedy and gives back characters
// until a W follows: the match's W part starts at the last W character of the U run or,
// better, right after the run.
func upperLower(s string, j int) int {
	lastW, lastWEnd := -1, 0
	k := j
	for {
		r, n := at(s, k)
		if n == 0 || !isUpper(r) {
			break
		}
		if isLower(r) {
			lastW, lastWEnd = k, k+n
		}
		k += n
	}
	if r, n := at(s, k); n > 0 && isLower(r) {
		return withContraction(s, run(s, k+n, isLower))
	}
	if lastW < 0 {
		return 0
	}
	// The W part is that one character: the U run's characters after it are not W.
	return withContraction(s, lastWEnd)
}

// upperThenLower matches U+W*C? at s[j], or returns 0.
func upperThenLower(s string, j int) int {
	k := run(s, j, isUpper)
	if k == j {
		return 0
	}
	return withContraction(s, run(s, k, isLower))
}

// withContraction extends a word that ends at s[e] by a contraction that follows it.
func withContraction(s string, e int) int {
	if e < len(s) && s[e] == '\'' {
		if c := contraction(s, e+1); c > 0 {
			return c
		}
	}
	return e
}

// contraction returns the end of 's, 't, 're, 've, 'm, 'll or 'd (any case; ſ is an s, as
// for the regular expression) whose letters start at s[i], or 0.
func contraction(s string, i int) int {
	c, n := at(s, i)
	switch c {
	case 's', 'S', 't', 'T', 'm', 'M', 'd', 'D', 'ſ':
		return i + n
	}
	d, m := at(s, i+n)
	switch {
	case (c == 'r' || c == 'R' || c == 'v' || c == 'V') && (d == 'e' || d == 'E'),
		(c == 'l' || c == 'L') && (d == 'l' || d == 'L'):
		return i + n + m
	}
	return 0
}

// run returns the end of the run of characters in class that starts at s[i].
func run(s string, i int, class func(rune) bool) int {
	for {
		r, n := at(s, i)
		if n == 0 || !class(r) {
			return i
		}
		i += n
	}
}
