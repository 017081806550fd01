package cli

import (
	"encoding/json"
	"fmt"
	"net/textproto"
	"strings"

	"github.com/tokperf/tokperf/internal/bench"
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
