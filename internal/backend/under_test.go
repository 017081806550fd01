package backend

import "testing"

// Derived URLs go under the base's path and keep its query: appending to
// the base put /metrics inside the query (GET /m?key=S/metrics).
func TestUnder(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, base, route, want string }{
		{"plain", "http://h:8000", "/metrics", "http://h:8000/metrics"},
		{"trailing slash", "http://h:8000/", "/metrics", "http://h:8000/metrics"},
		{"path", "http://h/m", "/metrics", "http://h/m/metrics"},
		{"query kept", "http://h/m?key=S", "/metrics", "http://h/m/metrics?key=S"},
		{"query and slash", "https://h/m/?key=S&x=1", "/v1/models", "https://h/m/v1/models?key=S&x=1"},
		{"fragment kept", "http://h/m?key=S#f", "/metrics", "http://h/m/metrics?key=S#f"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Under(c.base, c.route); got != c.want {
				t.Errorf("Under(%q, %q) = %q, want %q", c.base, c.route, got, c.want)
			}
		})
	}
}
