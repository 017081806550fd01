package k8s

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// writeYAML writes v, marshalled as JSON, as block-style YAML in the same
// key order. Every string is written double-quoted as JSON quotes it (a
// JSON string is a YAML double-quoted scalar), so no value is ever read
// back as something else: "on", "1e3", "2026-12-01" and "null" stay
// strings for kubectl's YAML 1.1 reader as much as for a YAML 1.2 one.
func writeYAML(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	dec := json.NewDecoder(&buf)
	dec.UseNumber()
	tree, err := ordered(dec)
	if err != nil {
		return err
	}
	var out strings.Builder
	block(&out, tree, 0)
	_, err = io.WriteString(w, out.String())
	return err
}

// object is a JSON object with its keys in order.
type object []member

type member struct {
	key string
	val any // object, []any, or a scalar already in its YAML spelling
}

// ordered reads one JSON value from dec, objects in their key order.
func ordered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			o := object{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := ordered(dec)
				if err != nil {
					return nil, err
				}
				o = append(o, member{k.(string), v})
			}
			_, err := dec.Token()
			return o, err
		}
		a := []any{}
		for dec.More() {
			v, err := ordered(dec)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
		}
		_, err := dec.Token()
		return a, err
	case string:
		return quote(t), nil
	case json.Number:
		return t.String(), nil
	case bool:
		return fmt.Sprint(t), nil
	}
	return "null", nil
}

// quote is s as a JSON string, which YAML reads as the same string, with
// the characters YAML does not allow unescaped (DEL, the C1 controls,
// U+FFFE and U+FFFF) escaped as JSON escapes the C0 controls.
func quote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	q := strings.TrimSuffix(b.String(), "\n")
	return escapeUnprintable(q)
}

func escapeUnprintable(q string) string {
	var b strings.Builder
	for _, r := range q {
		if (r >= 0x7f && r <= 0x9f) || r == 0xfffe || r == 0xffff {
			fmt.Fprintf(&b, `\u%04x`, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// plainKey is a key YAML reads as itself unquoted.
var plainKey = lazyRegexp(`^[A-Za-z][A-Za-z0-9]*$`)

// block writes v at indent as the value of a key or a list item whose
// line the caller has begun (for an object or a list: begun and ended).
func block(b *strings.Builder, v any, indent int) {
	pad := strings.Repeat(" ", indent)
	switch t := v.(type) {
	case object:
		for _, m := range t {
			k := m.key
			if !plainKey().MatchString(k) {
				k = quote(k)
			}
			b.WriteString(pad + k + ":")
			value(b, m.val, indent+2)
		}
	case []any:
		for _, item := range t {
			var sub strings.Builder
			switch item.(type) {
			case object, []any:
				if isEmpty(item) {
					b.WriteString(pad + "- " + empty(item) + "\n")
					continue
				}
				block(&sub, item, indent+2)
				b.WriteString(pad + "- " + strings.TrimPrefix(sub.String(), pad+"  "))
			default:
				b.WriteString(pad + "- " + item.(string) + "\n")
			}
		}
	}
}

// value writes the rest of a "key:" line and, for a collection, the lines
// below it.
func value(b *strings.Builder, v any, indent int) {
	switch v.(type) {
	case object, []any:
		if isEmpty(v) {
			b.WriteString(" " + empty(v) + "\n")
			return
		}
		b.WriteString("\n")
		block(b, v, indent)
	default:
		b.WriteString(" " + v.(string) + "\n")
	}
}

func isEmpty(v any) bool {
	switch t := v.(type) {
	case object:
		return len(t) == 0
	case []any:
		return len(t) == 0
	}
	return false
}

func empty(v any) string {
	if _, ok := v.(object); ok {
		return "{}"
	}
	return "[]"
}
