package analyze

import (
	"strings"
	"testing"
)

// --claim of any text is a verdict that names the ratio or an error that
// quotes the claim; never a panic, whatever the ratios (zero included).
func FuzzClaim(f *testing.F) {
	for _, s := range []string{"3x", "1.5", "2 times", "3×", "", "x", ".5x", "1e9", "00000000000000000000000000000001x", "-1"} {
		f.Add(s, 100.0, 50.0)
	}
	f.Add("2x", 0.0, 0.0)
	f.Fuzz(func(t *testing.T, claim string, run, base float64) {
		r := Ratio{C: 8, Run: run, Base: base, Ratio: run / base}
		text, err := Claim(claim, []Ratio{r})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "--claim") {
				t.Fatalf("error %q does not name the flag", err)
			}
			return
		}
		if !strings.HasPrefix(text, "the claim ") || !strings.Contains(text, "at C=8") {
			t.Fatalf("verdict %q", text)
		}
		if _, err := Claim(claim, nil); err == nil {
			t.Fatal("a claim with no shared level was judged")
		}
	})
}
