package analyze

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// ShortMax is the most characters a verdict's short line has: it fits
// one line of a terminal with its question, its answer and its key number.
const ShortMax = 159

// Short is the verdict in one line of at most ShortMax characters: its
// question, its answer and the key number it rests on; Line has the
// details. A withheld verdict gives its first measured cause.
func (v *LoopVerdict) Short() string {
	head, _, _ := strings.Cut(v.Text, " — ")
	var key string
	switch {
	case v.Withheld != "":
		head, key = v.Question+": withheld", firstCause(v.Withheld)
	case !v.Answered():
		_, key, _ = strings.Cut(v.Text, " — ")
	case v.Question == "representative":
		key = v.representativeKey()
	case v.Question == "configurations":
		head = "configurations: differ"
		if v.Answer != "differ" {
			head = "configurations: no significant difference"
		}
		key = v.configurationsKey()
	case v.Question == "fair":
		key = v.fairKey()
	default:
		_, rest, _ := strings.Cut(v.Text, " — ")
		if rest == "" {
			rest = strings.TrimPrefix(v.Text, v.Question+": ")
		}
		key, _, _ = strings.Cut(rest, " | ")
	}
	if key == "" {
		return clip(head)
	}
	return clip(head + " — " + key)
}

// firstCause is the first clause of a withholding's reason, without the
// "not judged:" that every one starts with.
func firstCause(why string) string {
	why = strings.TrimPrefix(why, "not judged: ")
	first, _, _ := strings.Cut(why, "; ")
	return first
}

// clip cuts s to ShortMax characters, at a word where it can, with "…".
func clip(s string) string {
	if utf8.RuneCountInString(s) <= ShortMax {
		return s
	}
	r := []rune(s)[:ShortMax-1]
	cut := string(r)
	if i := strings.LastIndexByte(cut, ' '); i > len(cut)*2/3 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:") + "…"
}

// ratioKey is a ratio figure as a short line quotes it.
func ratioKey(f VerdictFigure) string {
	if f.Lo != nil && f.Hi != nil {
		return fmt.Sprintf("%.2f× [%.2f, %.2f]", f.Value, *f.Lo, *f.Hi)
	}
	return fmt.Sprintf("%.2f×", f.Value)
}

// representativeKey is the workloads' ratio that moved most (a
// significant one first), at its level.
func (v *LoopVerdict) representativeKey() string {
	var best *VerdictFigure
	score := func(f *VerdictFigure) float64 {
		s := math.Abs(math.Log(f.Value))
		if f.Significant != nil && *f.Significant {
			s += 100
		}
		return s
	}
	n := 0
	for i := range v.Figures {
		f := &v.Figures[i]
		if f.Name != "ratio" || !(f.Value > 0) {
			continue
		}
		n++
		if best == nil || score(f) > score(best) {
			best = f
		}
	}
	if best == nil {
		return ""
	}
	key := fmt.Sprintf("%s C=%d %s / %s %s", best.Config, best.Concurrency, best.Workload, best.Against, ratioKey(*best))
	if n > 1 {
		key += fmt.Sprintf(" (of %d ratios)", n)
	}
	return key
}

// configurationsKey is the first configuration's ratios to the base,
// level by level, as many as fit.
func (v *LoopVerdict) configurationsKey() string {
	var cfg, base string
	var cells []string
	others := map[string]bool{}
	for _, f := range v.Figures {
		if f.Name != "ratio" {
			continue
		}
		if cfg == "" {
			cfg, base = f.Config, f.Against
		}
		if f.Config != cfg {
			others[f.Config] = true
			continue
		}
		c := fmt.Sprintf("C=%d %s", f.Concurrency, ratioKey(f))
		if f.Significant == nil || !*f.Significant {
			c += " ~"
		}
		cells = append(cells, c)
	}
	if cfg == "" {
		return ""
	}
	key := fmt.Sprintf("%s / %s: %s", cfg, base, strings.Join(cells, ", "))
	if len(others) > 0 {
		key += fmt.Sprintf(" (+%d more)", len(others))
	}
	return key
}

// fairKey is the first configuration's ratio to the baseline, per GPU
// where it has one.
func (v *LoopVerdict) fairKey() string {
	for _, f := range v.Figures {
		if f.Name != "ratio" {
			continue
		}
		key := fmt.Sprintf("%s / %s at C=%d: %.2f×", f.Config, f.Against, f.Concurrency, f.Value)
		for _, g := range v.Figures {
			if g.Name == "per_gpu_ratio" && g.Config == f.Config && g.Concurrency == f.Concurrency {
				key += fmt.Sprintf(", %.2f× per GPU", g.Value)
			}
		}
		return key
	}
	return ""
}
