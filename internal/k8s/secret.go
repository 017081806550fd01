package k8s

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// A credential in the benchmark's flags (a header such as Authorization or
// X-Api-Key, a URL's query or user info) is not written into a manifest
// or a script: the argument refers to a variable instead, set from a
// Kubernetes Secret (or, for Slurm, the environment sbatch passes on), as
// --api-key-secret does for the API key.

// secretVar is the variable that carries the i-th credential.
func secretVar(i int) string { return "TOKPERF_SECRET_" + strconv.Itoa(i) }

// secretArg is one argument that holds a credential: the argument with
// the credential's place marked, the credential's key in the Secret, and
// what it is, for the manifest's head.
type secretArg struct {
	before string // the argument before the credential
	key    string // the Secret's key
	what   string
}

// credentials finds the credentials in bench: header values whose name
// says credential, and URLs with user info or a query (the whole URL is
// the secret: its query is the key). Nil for an argument without one.
func credentials(bench []string) []*secretArg {
	out := make([]*secretArg, len(bench))
	n := 0
	for i, a := range bench {
		flag, value, inline := strings.Cut(a, "=")
		prev := ""
		if i > 0 {
			prev = bench[i-1]
		}
		switch {
		case inline && flag == "--header":
			out[i] = header(flag+"=", value, &n)
		case prev == "--header" && !strings.HasPrefix(a, "--"):
			out[i] = header("", a, &n)
		case inline && strings.HasPrefix(flag, "--") && secretURL(value):
			n++
			out[i] = &secretArg{before: flag + "=", key: fmt.Sprintf("url-%d", n), what: flag + " (its query or user info)"}
		case secretURL(a) && strings.HasPrefix(prev, "--"):
			n++
			out[i] = &secretArg{key: fmt.Sprintf("url-%d", n), what: prev + " (its query or user info)"}
		}
	}
	return out
}

// header is the secretArg of a --header value, nil when its name does
// not say credential.
func header(prefix, value string, n *int) *secretArg {
	name, v, ok := strings.Cut(value, ":")
	if !ok || !secretHeader(strings.TrimSpace(name)) || strings.TrimSpace(v) == "" {
		return nil
	}
	*n++
	return &secretArg{before: prefix + name + ": ", key: fmt.Sprintf("header-%d", *n), what: "header " + strings.TrimSpace(name)}
}

// secretHeader says whether a header's value is likely a credential:
// Authorization, Cookie, and names that end in Key, Token or Secret.
func secretHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "proxy-authorization", "cookie":
		return true
	}
	for _, end := range []string{"key", "token", "secret", "password"} {
		if strings.HasSuffix(n, end) {
			return true
		}
	}
	return false
}

// secretURL says whether s is an http(s) URL that holds a credential.
func secretURL(s string) bool {
	if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.User != nil || u.RawQuery != "")
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }
