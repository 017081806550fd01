package workload

import (
	"unicode/utf8"
)

// Tokenizer counts and cuts text the way the served model does. Its methods
// are called from several goroutines at once (Prepare and LoadDataset work
// on every CPU), so an implementation must be safe for concurrent use.
type Tokenizer interface {
	// Name says which tokenizer this is, for the report ("llama3", a
	// tokenizer.json path).
	Name() string
	// Encode splits text into token ids, without special tokens.
	Encode(text string) []int
	// Decode turns ids back into text.
	Decode(ids []int) string
	// Count is len(Encode(text)), possibly computed faster.
	Count(text string) int
}

// fit cuts text to a prefix of exactly n tokens by t and returns it with
// its count, which is n unless text has fewer tokens or no prefix of the
// decoded text has exactly n (then the count is the nearest found below).
//
// Cutting the ids and decoding is not enough: a decoder may drop or merge
// characters at the cut (a trailing space, a rune split between tokens), so
// the decoded text can re-encode to a few tokens more or less. fit moves
// the cut until the re-encoded count is n, then, if the ids give no such
// cut, searches the characters of the decoded text for one.
func fit(t Tokenizer, text string, n int) (string, int) {
	return fitIDs(t, text, t.Encode(text), n)
}

// fitIDs is fit with text's ids already encoded.
func fitIDs(t Tokenizer, text string, ids []int, n int) (string, int) {
	if len(ids) <= n {
		return text, len(ids)
	}
	m := n
	seen := map[int]bool{}
	var over string // shortest decoded cut counting more than n
	overN := -1
	best, bestN := "", 0
	for range 16 {
		if m < 1 || m > len(ids) || seen[m] {
			break
		}
		seen[m] = true
		s := t.Decode(ids[:m])
		c := t.Count(s)
		switch {
		case c == n:
			return s, n
		case c > n:
			if overN < 0 || c < overN {
				over, overN = s, c
			}
			m -= c - n
		default:
			if c > bestN {
				best, bestN = s, c
			}
			m += n - c
		}
	}
	if overN < 0 {
		return best, bestN
	}
	// Find the longest prefix of over (on a rune boundary) with at most n
	// tokens. Counts grow with the prefix, so a binary search over byte
	// lengths finds it in log(len) counts.
	lo, hi := 0, len(over) // Count(over[:lo]) ≤ n < Count(over[:hi])
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		for mid > lo && !utf8.RuneStart(over[mid]) {
			mid--
		}
		if mid == lo {
			mid = (lo + hi) / 2
			for mid < hi && !utf8.RuneStart(over[mid]) {
				mid++
			}
			if mid == hi {
				break
			}
		}
		if t.Count(over[:mid]) <= n {
			lo = mid
		} else {
			hi = mid
		}
	}
	s := over[:lo]
	c := t.Count(s)
	if c == n {
		return s, n
	}
	if c > bestN {
		best, bestN = s, c
	}
	// The count jumps over n at every cut (a merge across the boundary):
	// add short pieces, keeping each that moves the count towards n
	// without passing it.
	pieces := [...]string{" a", " the", ".", " I", " 1", ",", " and"}
	for range 8 {
		moved := false
		for _, p := range pieces {
			c := t.Count(best + p)
			if c == n {
				return best + p, n
			}
			if c > bestN && c < n {
				best, bestN, moved = best+p, c, true
				break
			}
		}
		if !moved {
			break
		}
	}
	return best, bestN
}
