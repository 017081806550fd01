package bench

import (
	"errors"
	"strings"
	"testing"
)

// A proxy the environment would send the target through is refused (not a
// usage error: exit 1) with what to do, --proxy among it; loopback,
// NO_PROXY hosts and a proxy-free environment pass.
func TestProxyRefused(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		url    string
		getenv func(string) string
		want   string
	}{
		{"http://gpu-box:8000", env("HTTP_PROXY", "http://user:secret@proxy:3128"), "add gpu-box to NO_PROXY"},
		{"https://gpu-box", env("https_proxy", "http://proxy:3128"), "does not send through it unasked"},
		{"http://gpu-box:8000", env("HTTP_PROXY", "http://proxy:3128", "NO_PROXY", "gpu-box"), ""},
		{"http://127.0.0.1:8000", env("HTTP_PROXY", "http://proxy:3128"), ""},
		{"http://gpu-box:8000", env(), ""},
	} {
		err := checkProxy(tc.url, tc.getenv)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want no complaint", tc.url, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.url, err, tc.want)
		case err != nil && errors.As(err, new(*ConfigError)):
			t.Errorf("%s: a ConfigError (exit 2): the command line is not what is wrong", tc.url)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("the proxy's password is shown: %v", err)
		}
	}
}
