package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// --header, --extra-body and the list flags (-c, --requests, --rate, the
// lengths) take any text without a panic: accepted values are what a
// request may carry, refused ones get an error.
func FuzzFlagValues(f *testing.F) {
	for _, s := range []string{"X-Tenant: bench", "Authorization: Bearer k", "Host: x", "a:b\r\nc", "{\"top_p\": 0.9}", "chat={\"seed\": 7}",
		"generate=", "{\"stream\": false}", "1,4,16", "1,,2", "-1", "99999999999999999999", "1e3", "0.5,2", "NaN", "128-512", "@", "nope=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var h headers
		if h.Set(s) == nil {
			x := h[len(h)-1]
			if x.Name == "" || strings.ContainsAny(x.Name+x.Value, "\r\n\x00") {
				t.Fatalf("header %q accepted as %+v", s, x)
			}
		}
		var b extraBody
		if b.Set(s) == nil {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(b[0].JSON, &m); err != nil || m == nil {
				t.Fatalf("extra body %q accepted as %s", s, b[0].JSON)
			}
			for _, own := range []string{"stream", "prompt", "messages"} {
				if _, ok := m[own]; ok {
					t.Fatalf("extra body %q sets %s", s, own)
				}
			}
		}
		var i ints
		_ = i.Set(s)
		var c counts
		_ = c.Set(s)
		var fl floats
		_ = fl.Set(s)
		var l lengths
		if !strings.HasPrefix(s, "@") { // a file name: not read here
			_ = l.Set(s)
		}
		_ = i.String() + c.String() + fl.String()
	})
}
