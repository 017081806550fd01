package cli

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// A server's text cannot drive the terminal: a model id and an error body
// holding OSC 52 (write the clipboard), a screen clear and a title reach
// stdout and stderr as visible escapes, never as control characters.
func TestServerTextIsEscaped(t *testing.T) {
	t.Parallel()
	const evil = "m\x1b]52;c;cm0gLXJmIH4=\x07\x1b[2J\x1b]0;pwned\x07\u009b31m"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			w.Write([]byte(`{"data":[{"id":"` + strings.NewReplacer("\x1b", `\u001b`, "\x07", `\u0007`).Replace(evil) + `"}]}`))
			return
		}
		if r.Method == http.MethodPost {
			http.Error(w, "bad "+evil, http.StatusBadRequest)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	out, errw, code := runCLI(t, "run", "--url", srv.URL, "--requests", "2", "-c", "1", "-o", filepath.Join(t.TempDir(), "r.jsonl"))
	if code == 0 {
		t.Fatalf("every request failed but exit 0\nstdout:\n%s\nstderr:\n%s", out, errw)
	}
	for name, s := range map[string]string{"stdout": out, "stderr": errw} {
		if strings.ContainsAny(s, "\x1b\x07\u009b") {
			t.Errorf("%s holds control characters:\n%q", name, s)
		}
	}
	if !strings.Contains(out+errw, `\u001b]52;c;`) {
		t.Errorf("the model id is not shown escaped:\nstdout:\n%s\nstderr:\n%s", out, errw)
	}
}
