package workload

import (
	"strings"
	"testing"
)

// With prefix groups, request i starts with prefix i mod G: requests G
// apart share the first SharedPrefix tokens exactly, neighbours do not.
func TestPrefixGroups(t *testing.T) {
	t.Parallel()
	in, _ := ParseLengths("80")
	w, err := New(Options{Input: in, Output: Fixed(4), SharedPrefix: 40, PrefixGroups: 3, Seed: 4, Tokenizer: &mergeTok{}})
	if err != nil {
		t.Fatal(err)
	}
	tok := &mergeTok{}
	w.Prepare(0, 7)
	head := func(i int) string {
		p := w.Request(i).Prompt
		s, n := fit(tok, p, 40)
		if n != 40 {
			t.Fatalf("request %d: no 40-token prefix", i)
		}
		return s
	}
	for i := range 4 {
		if head(i) != head(i+3) {
			t.Errorf("requests %d and %d do not share their group's prefix", i, i+3)
		}
		if head(i) == head(i+1) {
			t.Errorf("requests %d and %d share a prefix across groups", i, i+1)
		}
		if n := tok.Count(w.Request(i).Prompt); n != 80 {
			t.Errorf("request %d: %d tokens, want 80", i, n)
		}
	}
	if !strings.Contains(w.Describe(), "shared prefix 40 tokens in 3 groups") {
		t.Errorf("describe: %s", w.Describe())
	}
	s := Synthetic{InputTokens: 30, SharedPrefix: 10, PrefixGroups: 2, Seed: 1}
	words := func(i int) string { return strings.Join(strings.Fields(s.Request(i).Prompt)[:10], " ") }
	if words(0) != words(2) || words(1) != words(3) || words(0) == words(1) {
		t.Error("the word list's groups: requests 2 apart should share 10 words, neighbours not")
	}
	one := Synthetic{InputTokens: 30, SharedPrefix: 10, Seed: 1}
	if one.Request(1).Prompt[:20] != s.Request(0).Prompt[:20] {
		t.Error("group 0 is not the prefix of one group")
	}
}
