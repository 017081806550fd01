package workload

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/tokperf/tokperf/internal/infile"
)

// MaxLength is the longest length a Lengths gives: samples are clamped to
// [1, MaxLength], and fixed values, bounds and file values must lie in it.
const MaxLength = 1 << 20

// maxLengthValues caps how many lengths a file may hold (32 MiB of ints).
const maxLengthValues = 1 << 22

// Lengths is a distribution of token lengths, sampled the same for the same
// seed and index. The zero Lengths is unset: At gives 0.
type Lengths struct {
	kind   lengthKind
	n      int     // fixed value, median (lognormal), mean (normal), min (uniform)
	max    int     // uniform: max
	spread float64 // lognormal: sigma; normal: standard deviation
	file   string  // @FILE: the name as given
	values []int   // @FILE: the lengths read
}

type lengthKind uint8

const (
	lengthUnset lengthKind = iota
	lengthFixed
	lengthUniform
	lengthNormal
	lengthLognormal
	lengthFile
)

// Fixed is the distribution that always gives n (clamped to [1, MaxLength]).
func Fixed(n int) Lengths { return Lengths{kind: lengthFixed, n: clampLength(n)} }

const lengthsWant = "want N, N:lognormal:SIGMA, N:normal:SD, MIN-MAX or @FILE"

// ParseLengths reads a length distribution (see the package doc for the
// syntax). Its errors quote spec and say what it must look like; a caller
// prefixes the flag's name: fmt.Errorf("--input-tokens %w", err).
func ParseLengths(spec string) (Lengths, error) {
	s := strings.TrimSpace(spec)
	bad := func(why string) (Lengths, error) {
		return Lengths{}, fmt.Errorf("%q: %s", spec, why)
	}
	if name, ok := strings.CutPrefix(s, "@"); ok {
		if name == "" {
			return bad("want a file name after @")
		}
		f, err := infile.Open(context.Background(), name, infile.Small)
		if err != nil {
			return Lengths{}, fmt.Errorf("%q: %w", spec, err)
		}
		defer f.Close()
		v, err := ReadLengths(f, name)
		if err != nil {
			return Lengths{}, err
		}
		return Lengths{kind: lengthFile, file: name, values: v}, nil
	}
	length := func(t string) (int, bool) {
		v, err := strconv.Atoi(t)
		return v, err == nil && v >= 1 && v <= MaxLength
	}
	rangeErr := fmt.Sprintf("lengths must be whole numbers from 1 to %d; %s", MaxLength, lengthsWant)
	parts := strings.Split(s, ":")
	switch {
	case len(parts) == 1 && strings.Contains(s, "-") && !strings.HasPrefix(s, "-"):
		lo, hi, _ := strings.Cut(s, "-")
		return uniform(spec, lo, hi)
	case len(parts) == 1:
		v, ok := length(s)
		if !ok {
			if _, err := strconv.Atoi(s); err == nil {
				return bad(rangeErr)
			}
			return bad(lengthsWant)
		}
		return Fixed(v), nil
	case len(parts) == 3 && parts[0] == "uniform":
		return uniform(spec, parts[1], parts[2])
	case len(parts) == 3 && (parts[1] == "lognormal" || parts[1] == "normal"):
		v, ok := length(parts[0])
		if !ok {
			return bad(rangeErr)
		}
		x, err := strconv.ParseFloat(parts[2], 64)
		if parts[1] == "lognormal" {
			if err != nil || !(x > 0 && x <= 4) {
				return bad("SIGMA must be a number above 0 and at most 4, such as 0.6")
			}
			return Lengths{kind: lengthLognormal, n: v, spread: x}, nil
		}
		if err != nil || !(x >= 0 && x <= MaxLength) {
			return bad(fmt.Sprintf("SD must be a number from 0 to %d, such as 64", MaxLength))
		}
		return Lengths{kind: lengthNormal, n: v, spread: x}, nil
	}
	return bad(lengthsWant)
}

func uniform(spec, lo, hi string) (Lengths, error) {
	a, err1 := strconv.Atoi(lo)
	b, err2 := strconv.Atoi(hi)
	switch {
	case err1 != nil || err2 != nil:
		return Lengths{}, fmt.Errorf("%q: %s", spec, lengthsWant)
	case a < 1 || b > MaxLength || a > b:
		return Lengths{}, fmt.Errorf("%q: want MIN-MAX with 1 ≤ MIN ≤ MAX ≤ %d", spec, MaxLength)
	}
	return Lengths{kind: lengthUniform, n: a, max: b}, nil
}

// ReadLengths reads one length a line (blank lines and lines starting with
// # are skipped), each a whole number from 1 to MaxLength. Errors name the
// file and line.
func ReadLengths(r io.Reader, name string) ([]int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 4096)
	var v []int
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		x, err := strconv.Atoi(t)
		if err != nil || x < 1 || x > MaxLength {
			return nil, fmt.Errorf("%s:%d: want a whole number from 1 to %d, got %q", name, line, MaxLength, cut(t, 40))
		}
		if len(v) == maxLengthValues {
			return nil, fmt.Errorf("%s:%d: more than %d lengths", name, line, maxLengthValues)
		}
		v = append(v, x)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s:%d: line longer than 4096 bytes: want one number a line", name, line+1)
		}
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(v) == 0 {
		return nil, fmt.Errorf("%s: no lengths in the file: want one whole number a line", name)
	}
	return v, nil
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func clampLength(n int) int { return min(max(n, 1), MaxLength) }

// IsZero reports whether l is unset.
func (l Lengths) IsZero() bool { return l.kind == lengthUnset }

// String is l in the syntax ParseLengths reads; ParseLengths(l.String())
// gives l back (for @FILE, as long as the file is unchanged).
func (l Lengths) String() string {
	switch l.kind {
	case lengthFixed:
		return strconv.Itoa(l.n)
	case lengthUniform:
		return strconv.Itoa(l.n) + "-" + strconv.Itoa(l.max)
	case lengthNormal:
		return strconv.Itoa(l.n) + ":normal:" + strconv.FormatFloat(l.spread, 'g', -1, 64)
	case lengthLognormal:
		return strconv.Itoa(l.n) + ":lognormal:" + strconv.FormatFloat(l.spread, 'g', -1, 64)
	case lengthFile:
		return "@" + l.file
	}
	return ""
}

// Fixed reports the one value l gives, if it is a fixed length.
func (l Lengths) Fixed() (int, bool) { return l.n, l.kind == lengthFixed }

// At samples the length of request i: the same for the same seed and i,
// clamped to [1, MaxLength]. The zero Lengths gives 0.
func (l Lengths) At(seed int64, i int) int {
	if l.kind == lengthUnset {
		return 0
	}
	if l.kind == lengthFixed {
		return l.n
	}
	r := rand.New(rand.NewPCG(uint64(seed)^0x1e9f7b5c3a, uint64(i)))
	var x float64
	switch l.kind {
	case lengthUniform:
		return l.n + r.IntN(l.max-l.n+1)
	case lengthFile:
		return l.values[r.IntN(len(l.values))]
	case lengthNormal:
		x = float64(l.n) + l.spread*r.NormFloat64()
	case lengthLognormal:
		x = float64(l.n) * math.Exp(l.spread*r.NormFloat64())
	}
	if x >= MaxLength {
		return MaxLength
	}
	return clampLength(int(math.Round(x)))
}
