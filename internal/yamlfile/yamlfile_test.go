package yamlfile

import (
	"strings"
	"testing"
)

const doc = `name: x
decode:
  table:
    - batch: 1
      step_ms: 2
    - batch: 0
      step_ms: 3
`

func TestLine(t *testing.T) {
	t.Parallel()
	for field, want := range map[string]int{
		"name": 1, "decode": 3, "decode.table[1].batch": 6, "decode.table[1].nope": 6, "missing.field": 1,
	} {
		if got := Line([]byte(doc), field); got != want {
			t.Errorf("Line(%q) = %d, want %d", field, got, want)
		}
	}
	list := "- name: a\n  points:\n    - {concurrency: 1}\n- name: b\n  points:\n    - {concurrency: 0}\n"
	if got := Line([]byte(list), "[1].points[0].concurrency"); got != 6 {
		t.Errorf("list path: line %d, want 6", got)
	}
}

func TestDecodeAndLocate(t *testing.T) {
	t.Parallel()
	var v struct {
		Name string `yaml:"name"`
	}
	err := Decode("f.yaml", []byte("name: x\nextra: 1\n"), &v)
	if err == nil || !strings.HasPrefix(err.Error(), "f.yaml:2:") {
		t.Errorf("unknown field: %v", err)
	}
	err = Locate("f.yaml", []byte(doc), Fieldf("decode.table[1].batch", "must be positive"))
	if err == nil || err.Error() != "f.yaml:6: decode.table[1].batch: must be positive" {
		t.Errorf("located: %v", err)
	}
}

type figures struct {
	Name   string `yaml:"name"`
	Decode struct {
		Table []struct {
			Batch  int     `yaml:"batch"`
			StepMs float64 `yaml:"step_ms"`
		} `yaml:"table"`
	} `yaml:"decode"`
	Configs []struct {
		Name    string   `yaml:"name"`
		Command []string `yaml:"command"`
	} `yaml:"configs"`
	Points []map[string]float64 `yaml:"points"`
}

// TestHostile: files that crash or exhaust the YAML library are errors
// naming the file, found before the library sees them or recovered from it.
func TestHostile(t *testing.T) {
	t.Parallel()
	laughs := "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n"
	for i, c := range "bcdefghi" {
		prev := string("abcdefghi"[i])
		laughs += string(c) + ": &" + string(c) + " [" + strings.Repeat("*"+prev+",", 8) + "*" + prev + "]\n"
	}
	for _, tc := range []struct{ name, in, want string }{
		{"tag without a value in a list", "configs:\n  - name: a\n    command: !tag\n", "f.yaml:3:14: tags (!tag) are not supported"},
		{"tag without a value", "decode:\n  table: !t", "f.yaml:2:10: tags (!t) are not supported"},
		{"tag on points", "points: !t\n", "f.yaml:1:9: tags (!t) are not supported"},
		{"tag with a value", "name: !!str x\n", "f.yaml:1:7: tags (!!str) are not supported"},
		{"billion laughs", laughs, "f.yaml:1:4: anchors and aliases (& and *) are not supported"},
		{"alias", "name: *x\n", "f.yaml:1:7: anchors and aliases"},
		{"nested flow", strings.Repeat("[", 200<<10), "f.yaml:1: nested more than 32 deep"},
		{"nested flow over lines", strings.Repeat("{a:\n", 100), "f.yaml:33: nested more than 32 deep"},
		{"nested blocks on one line", strings.Repeat("- ", 100<<10) + "x\n", "f.yaml:1: nested more than 32 deep"},
		{"nested blocks", func() string {
			var b strings.Builder
			for i := range 40 {
				b.WriteString(strings.Repeat(" ", i) + "k:\n")
			}
			return b.String()
		}(), "f.yaml:33: nested more than 32 deep"},
		{"too big", "name: " + strings.Repeat("x", MaxSize) + "\n", "f.yaml: 1048583 bytes, over the 1024 KB"},
		{"infinite figure", "decode:\n  table:\n    - batch: 1\n      step_ms: 2\n    - batch: 2\n      step_ms: .inf\n", "f.yaml:6: decode.table[1].step_ms: must be a finite number"},
		{"NaN figure", "points:\n  - {c: 1, tok_s: .nan}\n", "f.yaml:2: points[0].tok_s: must be a finite number"},
		{"negative infinity", "decode: {table: [{batch: 1, step_ms: -.Inf}]}\n", "f.yaml:1: decode.table[0].step_ms: must be a finite number"},
		{"second document", "name: a\n---\nname: b\n", "f.yaml:2: a second YAML document (---)"},
		{"second document after a header", "---\nname: a\n---\nname: b\n", "f.yaml:3: a second YAML document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v figures
			err := Decode("f.yaml", []byte(tc.in), &v)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestPlain: what the embedded files use still reads, and a comment or a
// quoted string holding brackets and ampersands is no anchor or nesting.
func TestPlain(t *testing.T) {
	t.Parallel()
	in := "# a comment\n---\nname: \"a & b *c !d\" # [[[[ & *\ndecode:\n  table:\n    - {batch: 1, step_ms: 2.5}\n    - batch: 2\n      step_ms: 1e3\nconfigs:\n  - name: it's [1]\n    command: [sh, -c, 'echo [x] & wait']\n"
	var v figures
	if err := Decode("f.yaml", []byte(in), &v); err != nil {
		t.Fatal(err)
	}
	if v.Name != "a & b *c !d" || len(v.Decode.Table) != 2 || v.Decode.Table[1].StepMs != 1000 || v.Configs[0].Command[2] != "echo [x] & wait" {
		t.Errorf("decoded %+v", v)
	}
}

// FuzzDecode: whatever the bytes, Decode returns (an error naming the file,
// or a value) and never panics or runs away.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{"name: a\n", "---\nname: a\n---\nb: 1\n", "decode: {table: [{batch: 1, step_ms: 2}]}\n", "a: &x 1\nb: *x\n", "k: !t\n", "- - - x\n", "name: \"a\\u0000\"\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var v figures
		if err := Decode("fuzz.yaml", in, &v); err != nil && !strings.HasPrefix(err.Error(), "fuzz.yaml") {
			t.Fatalf("error without the file name: %v", err)
		}
	})
}
