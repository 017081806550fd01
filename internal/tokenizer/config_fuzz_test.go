package tokenizer

import (
	"strings"
	"testing"
)

// A tokenizer_config.json of any content gives a name that fits one line,
// or none; never a panic.
func FuzzTokenizerConfig(f *testing.F) {
	for _, s := range []string{`{"name_or_path": "Qwen/Qwen3-8B", "chat_template": "{% for m in messages %}{{ m }}{% endfor %}"}`,
		`{"name_or_path": "a\nb"}`, `{"name_or_path": 7}`, `{}`, `[`, `null`, `{"name_or_path": "\u2028x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if name := configName(data); strings.ContainsAny(name, "\n\r") {
			t.Fatalf("name %q spans lines", name)
		}
	})
}
