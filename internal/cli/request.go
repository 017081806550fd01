package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/textproto"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/infile"
	"github.com/tokperf/tokperf/internal/record"
)

// headers is --header 'Name: value', repeatable.
type headers []bench.Header

func (h *headers) String() string {
	var names []string
	for _, x := range *h {
		names = append(names, x.Name+": …")
	}
	return strings.Join(names, ", ")
}

func (h *headers) Type() string { return "'Name: value'" }

func (h *headers) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok || name == "" {
		return fmt.Errorf("want 'Name: value', e.g. 'X-Tenant: bench'")
	}
	for _, r := range name {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r) {
			return fmt.Errorf("%q is not a header name (letters, digits and -)", name)
		}
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return fmt.Errorf("the value of %s holds a line break", name)
	}
	canon := textproto.CanonicalMIMEHeaderKey(name)
	switch canon {
	case "Host", "Content-Length", "Content-Type", "Transfer-Encoding", "Connection", "Accept", "X-Request-Id", "Te", "Upgrade":
		return fmt.Errorf("%s is tokperf's own to set", canon)
	}
	*h = append(*h, bench.Header{Name: canon, Value: value})
	return nil
}

// extraBody is --extra-body JSON or ENDPOINT=JSON, repeatable: fields
// merged into every request body (of that endpoint only, with a prefix).
type extraBody []bench.ExtraBody

func (b *extraBody) String() string {
	var s []string
	for _, x := range *b {
		if x.Endpoint != "" {
			s = append(s, x.Endpoint+"="+string(x.JSON))
		} else {
			s = append(s, string(x.JSON))
		}
	}
	return strings.Join(s, " ")
}

func (b *extraBody) Type() string { return "[ENDPOINT=]JSON" }

func (b *extraBody) Set(s string) error {
	var x bench.ExtraBody
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") {
		ep, rest, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("want a JSON object such as '{\"top_p\":0.9}', or ENDPOINT=JSON")
		}
		switch ep {
		case "generate", "completions", "chat", "api-chat", "responses", "messages":
		default:
			return fmt.Errorf("endpoint %q: want generate, completions, chat, api-chat, responses or messages before the =", ep)
		}
		x.Endpoint, s = ep, strings.TrimSpace(rest)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &fields); err != nil || fields == nil {
		if err == nil {
			err = fmt.Errorf("null")
		}
		return fmt.Errorf("not a JSON object: %v", err)
	}
	for _, k := range []string{"stream", "prompt", "messages", "text", "inputs"} {
		if _, ok := fields[k]; ok {
			return fmt.Errorf("%q is tokperf's own to set (it measures the stream of the prompt it sends)", k)
		}
	}
	x.JSON = json.RawMessage(s)
	*b = append(*b, x)
	return nil
}

// responseFormat is --response-format: json (any JSON object) or
// json_schema:FILE (JSON that follows the schema in FILE, named by the
// file's base name). One flag whose value names the mode, as the APIs'
// "type" does; the schema comes from a file, since schemas are long and
// full of quotes no shell line keeps readable.
type responseFormat struct {
	arg string
	f   *record.ResponseFormat
}

func (r *responseFormat) String() string { return r.arg }
func (r *responseFormat) Type() string   { return "json|json_schema:FILE" }

func (r *responseFormat) Set(s string) error {
	kind, file, _ := strings.Cut(s, ":")
	switch {
	case s == "json":
		r.arg, r.f = s, &record.ResponseFormat{Type: "json"}
		return nil
	case kind != "json_schema" || file == "":
		return fmt.Errorf("want json or json_schema:FILE")
	}
	b, err := infile.ReadAll(context.Background(), file, infile.Small)
	if err != nil {
		return err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, b); err != nil || !bytes.HasPrefix(compact.Bytes(), []byte("{")) {
		return fmt.Errorf("%s is not a JSON schema (a JSON object)", file)
	}
	// The OpenAI APIs want a name of [a-zA-Z0-9_-], 64 at most.
	name := schemaName.ReplaceAllString(strings.TrimSuffix(filepath.Base(file), filepath.Ext(file)), "_")
	r.arg, r.f = s, &record.ResponseFormat{Type: "json_schema", Name: name[:min(len(name), 64)], Schema: compact.Bytes()}
	return nil
}

var schemaName = regexp.MustCompile(`[^a-zA-Z0-9_-]`)
