// Package yamlfile decodes the YAML files tokperf reads (simulator
// profiles, baselines) strictly, and makes every error name the file, the
// line and the field:
//
//	err := yamlfile.Decode("p.yaml", data, &p)          // "p.yaml:3:1: unknown field "x""
//
// It also bounds what the YAML library is given (see MaxSize, MaxDepth),
// since the library has no limits of its own.
//
//	err = yamlfile.Locate("p.yaml", data, yamlfile.Fieldf("decode.linear", "needs a_ms > 0"))
package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"
)

// Limits of what a tokperf YAML file may hold. The files are a few KB and
// use plain YAML; the limits keep a broken or hostile file from costing
// more than a moment (the library has no limits of its own: a 520-byte
// file of aliases expands to gigabytes, 200 KB of "[" exhausts memory).
const (
	MaxSize  = 1 << 20 // bytes
	MaxDepth = 32      // nested collections, block and flow
)

// Decode unmarshals data into v, rejecting unknown fields, with errors as
// "file:line:column: message". Before the library sees the file it checks
// the size and nesting depth and rejects anchors, aliases and tags, which
// these files never need; a number that is not finite (.inf, .nan) is
// rejected as "file:line: field: message".
func Decode(file string, data []byte, v any) (err error) {
	if len(data) > MaxSize {
		return fmt.Errorf("%s: %d bytes, over the %d KB a tokperf YAML file may hold", file, len(data), MaxSize>>10)
	}
	if err := flowDepth(file, data); err != nil {
		return err
	}
	defer func() {
		// The library panics on some inputs (a tag with no value): that is
		// a bad file, not a crash.
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: not YAML that tokperf can read (the YAML library failed: %v)", file, p)
		}
	}()
	if err := scan(file, data); err != nil {
		return err
	}
	if err := yaml.UnmarshalWithOptions(data, v, yaml.Strict()); err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil {
			pos := ye.GetToken().Position
			return fmt.Errorf("%s:%d:%d: %s", file, pos.Line, pos.Column, ye.GetMessage())
		}
		return fmt.Errorf("%s: %v", file, err)
	}
	if field := nonFinite(reflect.ValueOf(v), ""); field != "" {
		return Locate(file, data, Fieldf(field, "must be a finite number, not .inf or .nan"))
	}
	return nil
}

// flowDepth bounds the nesting of flow collections ([ and {) with one pass
// over the bytes, before anything is allocated per token. It counts
// brackets outside comments; one inside a quoted string counts too, which
// errs on the strict side only for a file with dozens of them.
func flowDepth(file string, data []byte) error {
	depth, line, comment := 0, 1, false
	for i, c := range data {
		switch {
		case c == '\n':
			line, comment = line+1, false
		case comment:
		case c == '#' && (i == 0 || data[i-1] == ' ' || data[i-1] == '\t' || data[i-1] == '\n'):
			comment = true
		case c == '[' || c == '{':
			if depth++; depth > MaxDepth {
				return fmt.Errorf("%s:%d: nested more than %d deep", file, line, MaxDepth)
			}
		case c == ']' || c == '}':
			depth = max(depth-1, 0)
		}
	}
	return nil
}

// scan reads the file's tokens and rejects what these files never need
// and the library cannot be trusted with: anchors and aliases (an alias
// can expand a small file to gigabytes), tags, and block nesting deeper
// than MaxDepth (each level is a column further right, so "- - - …" on one
// line nests too).
func scan(file string, data []byte) error {
	var cols []int // columns of the open block collections
	flow := 0
	// A tag at the very end, with no newline after it, is dropped by the
	// lexer unless one follows.
	tokens := lexer.Tokenize(string(data) + "\n")
	for i, t := range tokens {
		pos := t.Position
		switch t.Type {
		case token.DocumentHeaderType:
			// The library reads the first document and drops the rest
			// without a word.
			if slices.ContainsFunc(tokens[:i], func(t *token.Token) bool { return t.Type != token.CommentType }) {
				return fmt.Errorf("%s:%d: a second YAML document (---): tokperf reads one a file; give the other a file of its own", file, pos.Line)
			}
		case token.AnchorType, token.AliasType:
			return fmt.Errorf("%s:%d:%d: anchors and aliases (& and *) are not supported: write the values out", file, pos.Line, pos.Column)
		case token.TagType:
			return fmt.Errorf("%s:%d:%d: tags (%s) are not supported: write the value plainly", file, pos.Line, pos.Column, t.Value)
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		}
		col := -1
		switch {
		case flow > 0:
		case t.Type == token.SequenceEntryType || t.Type == token.MappingKeyType:
			col = pos.Column
		case t.Type == token.MappingValueType && i > 0:
			col = tokens[i-1].Position.Column // the key's
		}
		if col < 0 {
			continue
		}
		for len(cols) > 0 && cols[len(cols)-1] > col {
			cols = cols[:len(cols)-1]
		}
		if len(cols) == 0 || cols[len(cols)-1] < col {
			cols = append(cols, col)
		}
		if len(cols)+flow > MaxDepth {
			return fmt.Errorf("%s:%d: nested more than %d deep", file, pos.Line, MaxDepth)
		}
	}
	return nil
}

// nonFinite is the path ("decode.table[1].step_ms") of the first float in
// v that is infinite or NaN, or "".
func nonFinite(v reflect.Value, path string) string {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return nonFinite(v.Elem(), path)
		}
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsInf(f, 0) || math.IsNaN(f) {
			return path
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if p := nonFinite(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			if p := nonFinite(v.MapIndex(k), join(path, fmt.Sprint(k))); p != "" {
				return p
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			sub := join(path, name)
			if strings.Contains(opts, "inline") {
				sub = path
			}
			if p := nonFinite(v.Field(i), sub); p != "" {
				return p
			}
		}
	}
	return ""
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
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
func Line(data []byte, field string) (line int) {
	defer func() {
		if recover() != nil {
			line = 1
		}
	}()
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
