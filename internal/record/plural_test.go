package record

import "testing"

func TestPlural(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0 requests were", 1: "1 request was", 2: "2 requests were"} {
		if got := Plural(n, "request") + WereWas(n); got != want {
			t.Errorf("Plural(%d)+WereWas(%d) = %q, want %q", n, n, got, want)
		}
	}
}
