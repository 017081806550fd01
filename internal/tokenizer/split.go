package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The split pattern of Llama 3, Qwen 2/3 and cl100k_base, matched by hand: regexp2 spends
// most of an encode matching it (see BenchmarkEncode), and this function gives the same
// matches (TestFastSplit and FuzzFastSplit compare the two).
const (
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2Pattern  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// fastSplits maps each pattern with a hand-written matcher to its matcher: the end of the
// match that starts at s[i]. Every position starts a match for these patterns, so the matches
// tile the text.
var fastSplits = map[string]func(s string, i int) int{
	llama3Pattern: func(s string, i int) int { return llamaMatch(s, i, 3) },
	qwen2Pattern:  func(s string, i int) int { return llamaMatch(s, i, 1) },
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
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	j := i
	if c == ' ' {
		j++
	}
	if d, m := at(s, j); m > 0 && isOther(d) {
		j = run(s, j+m, isOther)
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
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
