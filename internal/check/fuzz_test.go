package check

import (
	"strings"
	"testing"
)

// An eval file of any content gives items that each have a prompt and
// exactly one answer, or an error naming the file; never a panic.
func FuzzEval(f *testing.F) {
	for _, s := range []string{
		`{"prompt": "2+2?", "expected": "4"}` + "\n" + `{"prompt": "a color", "regex": "(?i)red|blue"}`,
		`{"prompt": "x"}`, `{"prompt": "", "expected": "y"}`, `{"prompt": "x", "regex": "("}`, "\n\n", "[1]", "{",
		`{"prompt": "x", "expected": "a", "regex": "b"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		items, err := ParseEval(strings.NewReader(in), "eval.jsonl")
		if err != nil {
			if !strings.Contains(err.Error(), "eval.jsonl") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, it := range items {
			if it.Prompt == "" || (it.Expected == "") == (it.Regex == nil) || !strings.HasPrefix(it.Where, "eval.jsonl line ") {
				t.Fatalf("item %+v", it)
			}
			it.Correct("an answer") // scoring any text never panics
		}
	})
}
