package sim

import (
	"regexp"
	"strconv"
	"strings"
)

// The simulator answers the exact-answer questions of tokperf check (and
// any prompt phrased the same way) correctly, or wrongly with the
// wrong_answers fault: a stand-in for a silently broken kernel. It shares
// no code with the client, so the client's scoring is checked against an
// independent answer.

var (
	askAdd    = regexp.MustCompile(`What is (\d+) \+ (\d+)\?`)
	askMul    = regexp.MustCompile(`What is (\d+) times (\d+)\?`)
	askWords  = regexp.MustCompile(`Write (\d+) in words`)
	askNumber = regexp.MustCompile(`Which number is written '([a-z\- ]+)'`)
)

// answerFor returns the answer's tokens (words) for a question in the
// prompt, or nil.
func answerFor(prompt string, wrong bool) []string {
	off := 0
	if wrong {
		off = 1
	}
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	if m := askAdd.FindStringSubmatch(prompt); m != nil {
		return []string{strconv.Itoa(atoi(m[1]) + atoi(m[2]) + off)}
	}
	if m := askMul.FindStringSubmatch(prompt); m != nil {
		return []string{strconv.Itoa(atoi(m[1])*atoi(m[2]) + off)}
	}
	if m := askWords.FindStringSubmatch(prompt); m != nil {
		if n := atoi(m[1]); n >= 0 && n < 1000 {
			return strings.Fields(numberWords((n + off) % 1000))
		}
	}
	if m := askNumber.FindStringSubmatch(prompt); m != nil {
		if n, ok := wordsNumber(m[1]); ok {
			return []string{strconv.Itoa(n + off)}
		}
	}
	return nil
}

var small = strings.Fields("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen")
var decades = strings.Fields("_ _ twenty thirty forty fifty sixty seventy eighty ninety")

// numberWords spells 0 ≤ n < 1000 without "and".
func numberWords(n int) string {
	s := ""
	if n >= 100 {
		s = small[n/100] + " hundred"
		if n %= 100; n == 0 {
			return s
		}
		s += " "
	}
	switch {
	case n < 20:
		return s + small[n]
	case n%10 == 0:
		return s + decades[n/10]
	}
	return s + decades[n/10] + "-" + small[n%10]
}

// wordsNumber reads numberWords' output.
func wordsNumber(s string) (int, bool) {
	for n := 0; n < 1000; n++ {
		if numberWords(n) == strings.TrimSpace(s) {
			return n, true
		}
	}
	return 0, false
}
