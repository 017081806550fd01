package backend

import (
	"strings"
	"testing"
)

// A --tokenizer server answer of any content decodes into the ids or the
// text it holds, or an error naming the URL with its query masked; never
// a panic.
func FuzzTokenizerAnswer(f *testing.F) {
	for _, s := range []string{`{"tokens": [1, 2, 3]}`, `{"prompt": "hi"}`, `{"content": "hi"}`, `{"tokens": "x"}`, `{"tokens": [1.5]}`,
		`{"tokens": [99999999999999999999]}`, `<html>`, ``, `{"tokens": null}`} {
		f.Add([]byte(s), 200)
	}
	f.Add([]byte(`{"error": "no"}`), 500)
	const url = "http://h/tokenize?key=S3CRET"
	f.Fuzz(func(t *testing.T, data []byte, code int) {
		var ids struct {
			Tokens []int `json:"tokens"`
		}
		var text map[string]any
		for _, out := range []any{&ids, &text} {
			err := answer(url, code, data, out)
			if err != nil && (!strings.Contains(err.Error(), "http://h/tokenize?key=xxxxx") || strings.Contains(err.Error(), "S3CRET")) {
				t.Fatalf("error %q: want the URL named, its key masked", err)
			}
			if err == nil && code != 200 {
				t.Fatalf("HTTP %d accepted", code)
			}
		}
	})
}
