// Package yamlfile decodes the YAML files tokperf reads (simulator
// profiles, baselines) strictly, and makes every error name the file, the
// line and the field:
//
//	err := yamlfile.Decode("p.yaml", data, &p)          // "p.yaml:3:1: unknown field "x""
//	err = yamlfile.Locate("p.yaml", data, yamlfile.Fieldf("decode.linear", "needs a_ms > 0"))
package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"
)

// Decode unmarshals data into v, rejecting unknown fields, with errors as
// "file:line:column: message".
func Decode(file string, data []byte, v any) error {
	if err := yaml.UnmarshalWithOptions(data, v, yaml.Strict()); err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil {
			pos := ye.GetToken().Position
			return fmt.Errorf("%s:%d:%d: %s", file, pos.Line, pos.Column, ye.GetMessage())
		}
		return fmt.Errorf("%s: %v", file, err)
	}
	return nil
}

// FieldError is a bad value at a field path such as "decode.table[1].batch"
// or "[3].points[0].concurrency".
type FieldError struct{ Field, Msg string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Fieldf makes a FieldError.
func Fieldf(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Locate turns a FieldError into "file:line: field: message", finding the
// line of the field (or of its nearest parent) in data; other errors get
// the file name in front.
func Locate(file string, data []byte, err error) error {
	if err == nil {
		return nil
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		return fmt.Errorf("%s:%d: %s: %s", file, Line(data, fe.Field), fe.Field, fe.Msg)
	}
	return fmt.Errorf("%s: %v", file, err)
}

// Line is the line of a field's value in data (for a mapping, its first
// key), or of its nearest parent that exists; 1 when none does.
func Line(data []byte, field string) int {
	for p := field; p != ""; p = parent(p) {
		expr := "$." + p
		if strings.HasPrefix(p, "[") {
			expr = "$" + p
		}
		path, err := yaml.PathString(expr)
		if err != nil {
			continue
		}
		node, err := path.ReadNode(bytes.NewReader(data))
		if err == nil && node != nil && node.GetToken() != nil {
			return node.GetToken().Position.Line
		}
	}
	return 1
}

// parent drops the last element of a path: "a.b[2]" → "a.b" → "a".
func parent(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return ""
	}
	return p[:i]
}
