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
