package workload

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestParseLengths(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		spec, want string // want: String() of the result, or the error
	}{
		{"512", "512"},
		{" 512 ", "512"},
		{"512:lognormal:0.6", "512:lognormal:0.6"},
		{"512:normal:64", "512:normal:64"},
		{"512:normal:0", "512:normal:0"},
		{"100-2000", "100-2000"},
		{"uniform:100:2000", "100-2000"},
		{"7-7", "7-7"},
		{"@testdata/lengths.txt", "@testdata/lengths.txt"},
		{"512:lognormal", `"512:lognormal": want N, N:lognormal:SIGMA, N:normal:SD, MIN-MAX or @FILE`},
		{"", `"": want N, N:lognormal:SIGMA, N:normal:SD, MIN-MAX or @FILE`},
		{"abc", `"abc": want N, N:lognormal:SIGMA, N:normal:SD, MIN-MAX or @FILE`},
		{"0", `"0": lengths must be whole numbers from 1 to 1048576; want N, N:lognormal:SIGMA, N:normal:SD, MIN-MAX or @FILE`},
		{"-5", `"-5": lengths must be whole numbers from 1 to 1048576; want N, N:lognormal:SIGMA, N:normal:SD, MIN-MAX or @FILE`},
		{"2000000", `"2000000": lengths must be whole numbers from 1 to 1048576; want N, N:lognormal:SIGMA, N:normal:SD, MIN-MAX or @FILE`},
		{"512:lognormal:0", `"512:lognormal:0": SIGMA must be a number above 0 and at most 4, such as 0.6`},
		{"512:lognormal:NaN", `"512:lognormal:NaN": SIGMA must be a number above 0 and at most 4, such as 0.6`},
		{"512:normal:-1", `"512:normal:-1": SD must be a number from 0 to 1048576, such as 64`},
		{"512:gamma:2", `"512:gamma:2": want N, N:lognormal:SIGMA, N:normal:SD, MIN-MAX or @FILE`},
		{"2000-100", `"2000-100": want MIN-MAX with 1 ≤ MIN ≤ MAX ≤ 1048576`},
		{"0-100", `"0-100": want MIN-MAX with 1 ≤ MIN ≤ MAX ≤ 1048576`},
		{"1-2-3", `"1-2-3": want N, N:lognormal:SIGMA, N:normal:SD, MIN-MAX or @FILE`},
		{"@", `"@": want a file name after @`},
		{"@testdata/none.txt", `"@testdata/none.txt": open testdata/none.txt: no such file or directory`},
		{"@testdata/lengths-bad.txt", `testdata/lengths-bad.txt:3: want a whole number from 1 to 1048576, got "abc"`},
	} {
		t.Run(c.spec, func(t *testing.T) {
			l, err := ParseLengths(c.spec)
			got := l.String()
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("ParseLengths(%q) = %s\nwant %s", c.spec, got, c.want)
			}
			if err != nil {
				return
			}
			again, err := ParseLengths(l.String())
			if err != nil || again.String() != l.String() {
				t.Errorf("ParseLengths(String()) = %v, %v", again, err)
			}
		})
	}
}

func TestReadLengths(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, in, want string }{
		{"ok", "1\n# c\n\n 20 \n300", "[1 20 300]"},
		{"crlf", "5\r\n6\r\n", "[5 6]"},
		{"zero", "1\n0\n", `f.txt:2: want a whole number from 1 to 1048576, got "0"`},
		{"float", "1.5\n", `f.txt:1: want a whole number from 1 to 1048576, got "1.5"`},
		{"empty", "\n# none\n", "f.txt: no lengths in the file: want one whole number a line"},
		{"long line", "1\n" + strings.Repeat("9", 5000), "f.txt:2: line longer than 4096 bytes: want one number a line"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := ReadLengths(strings.NewReader(c.in), "f.txt")
			got := fmt.Sprint(v)
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Errorf("got %s\nwant %s", got, c.want)
			}
		})
	}
}

// TestLengthsStats samples each distribution with fixed seeds: the figures
// are the same on every run, so the tolerances cannot flake; they are
// loose enough to hold for any seed too (about 10 standard errors).
func TestLengthsStats(t *testing.T) {
	t.Parallel()
	const n = 20000
	for _, c := range []struct {
		spec         string
		mean, median float64
		tol          float64 // relative
		lo, hi       int
	}{
		{"512", 512, 512, 0, 512, 512},
		{"100-2000", 1050, 1050, 0.03, 100, 2000},
		{"512:normal:64", 512, 512, 0.01, 1, MaxLength},
		{"512:lognormal:0.6", 512 * math.Exp(0.18), 512, 0.05, 1, MaxLength},
		{"@testdata/lengths.txt", (128 + 256 + 512 + 1024) / 4.0, 384, 0.05, 128, 1024},
	} {
		t.Run(c.spec, func(t *testing.T) {
			l, err := ParseLengths(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			v := make([]int, n)
			sum := 0.0
			for i := range v {
				v[i] = l.At(42, i)
				if v[i] < c.lo || v[i] > c.hi {
					t.Fatalf("sample %d = %d, outside [%d, %d]", i, v[i], c.lo, c.hi)
				}
				sum += float64(v[i])
			}
			mean := sum / n
			slices.Sort(v)
			median := float64(v[n/2]+v[n/2-1]) / 2
			if math.Abs(mean-c.mean) > c.tol*c.mean+1e-9 {
				t.Errorf("mean %.1f, want %.1f ± %.0f%%", mean, c.mean, 100*c.tol)
			}
			// The file's median falls between 256 and 512.
			if c.spec[0] != '@' && math.Abs(median-c.median) > c.tol*c.median+1e-9 {
				t.Errorf("median %.1f, want %.1f ± %.0f%%", median, c.median, 100*c.tol)
			}
			if first, again := l.At(42, 17), l.At(42, 17); first != again {
				t.Error("same seed and index gave different lengths")
			}
		})
	}
}

func TestLengthsClamp(t *testing.T) {
	t.Parallel()
	l, _ := ParseLengths("1:normal:1000")
	for i := range 1000 {
		if v := l.At(1, i); v < 1 {
			t.Fatalf("sample %d = %d, want ≥ 1", i, v)
		}
	}
	l, _ = ParseLengths("1048576:lognormal:4")
	for i := range 1000 {
		if v := l.At(1, i); v > MaxLength {
			t.Fatalf("sample %d = %d, want ≤ %d", i, v, MaxLength)
		}
	}
	if (Lengths{}).At(1, 1) != 0 || !(Lengths{}).IsZero() {
		t.Error("the zero Lengths should give 0")
	}
	if Fixed(0).At(1, 1) != 1 {
		t.Error("Fixed(0) should clamp to 1")
	}
}
