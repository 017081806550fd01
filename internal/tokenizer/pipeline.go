package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
	"golang.org/x/text/unicode/norm"
)

// component is any normalizer, pre-tokenizer or decoder of tokenizer.json: the fields of all
// the kinds tokperf reads, told apart by Type.
type component struct {
	Type string `json:"type"`
	// Sequence
	Normalizers   []json.RawMessage `json:"normalizers"`
	PreTokenizers []json.RawMessage `json:"pretokenizers"`
	Decoders      []json.RawMessage `json:"decoders"`
	// Split, Replace
	Pattern  *patternJSON `json:"pattern"`
	Behavior string       `json:"behavior"`
	Invert   bool         `json:"invert"`
	Content  *string      `json:"content"`
	// ByteLevel, Metaspace
	AddPrefixSpace *bool   `json:"add_prefix_space"`
	UseRegex       *bool   `json:"use_regex"`
	Replacement    *string `json:"replacement"`
	PrependScheme  *string `json:"prepend_scheme"`
	Split          *bool   `json:"split"`
	// Prepend
	Prepend *string `json:"prepend"`
	// Strip
	Start int `json:"start"`
	Stop  int `json:"stop"`
	// Digits
	IndividualDigits bool `json:"individual_digits"`
}

type patternJSON struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

// compile returns the pattern as a regular expression. The patterns in tokenizer.json are
// written for Oniguruma; regexp2 reads the same syntax (lookahead, \p{..}, (?i:..)) and its
// \s is the same set (Unicode White_Space).
func (p *patternJSON) compile() (*regexp2.Regexp, error) {
	switch {
	case p == nil:
		return nil, errors.New("no pattern")
	case p.Regex != nil:
		re, err := regexp2.Compile(*p.Regex, regexp2.OptionMaxBacktrackingStackSize(-1))
		if err != nil {
			return nil, fmt.Errorf("pattern %q: %w", *p.Regex, err)
		}
		return re, nil
	case p.String != nil && *p.String != "":
		return regexp2.Compile(regexp2.Escape(*p.String))
	}
	return nil, errors.New("pattern has neither String nor Regex")
}

func decodeComponent(data json.RawMessage) (*component, error) {
	if len(data) == 0 || string(data) == "null" {
		return nil, nil
	}
	var c component
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// A normalizer rewrites a segment of text before it is split.
type normalizer interface {
	normalize(s string) string
}

type normFunc func(string) string

func (f normFunc) normalize(s string) string { return f(s) }

func parseNormalizer(data json.RawMessage) ([]normalizer, error) {
	c, err := decodeComponent(data)
	if err != nil || c == nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		var all []normalizer
		for _, n := range c.Normalizers {
			ns, err := parseNormalizer(n)
			if err != nil {
				return nil, err
			}
			all = append(all, ns...)
		}
		return all, nil
	case "NFC":
		return []normalizer{normFunc(norm.NFC.String)}, nil
	case "NFD":
		return []normalizer{normFunc(norm.NFD.String)}, nil
	case "NFKC":
		return []normalizer{normFunc(norm.NFKC.String)}, nil
	case "NFKD":
		return []normalizer{normFunc(norm.NFKD.String)}, nil
	case "Lowercase":
		return []normalizer{normFunc(strings.ToLower)}, nil
	case "Prepend":
		if c.Prepend == nil {
			return nil, errors.New("Prepend without prepend")
		}
		p := *c.Prepend
		return []normalizer{normFunc(func(s string) string {
			if s == "" {
				return s
			}
			return p + s
		})}, nil
	case "Replace":
		if c.Content == nil || c.Pattern == nil {
			return nil, errors.New("Replace needs pattern and content")
		}
		content := *c.Content
		if c.Pattern.String != nil {
			old := *c.Pattern.String
			return []normalizer{normFunc(func(s string) string { return strings.ReplaceAll(s, old, content) })}, nil
		}
		re, err := c.Pattern.compile()
		if err != nil {
			return nil, err
		}
		return []normalizer{normFunc(func(s string) string {
			out, err := re.Replace(s, strings.ReplaceAll(content, "$", "$$"), -1, -1)
			if err != nil {
				return s
			}
			return out
		})}, nil
	}
	return nil, fmt.Errorf("type %q is not supported", c.Type)
}

// A preTokenizer splits pieces of text into smaller ones, appending them to out.
type preTokenizer interface {
	split(sc *scratch, in, out []piece) []piece
}

// gpt2Pattern is the split the ByteLevel pre-tokenizer does when use_regex is set.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

func parsePreTokenizer(data json.RawMessage) ([]preTokenizer, error) {
	c, err := decodeComponent(data)
	if err != nil || c == nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		var all []preTokenizer
		for _, p := range c.PreTokenizers {
			ps, err := parsePreTokenizer(p)
			if err != nil {
				return nil, err
			}
			all = append(all, ps...)
		}
		return all, nil
	case "Split":
		re, err := c.Pattern.compile()
		if err != nil {
			return nil, fmt.Errorf("Split: %w", err)
		}
		b, err := parseBehavior(c.Behavior)
		if err != nil {
			return nil, fmt.Errorf("Split: %w", err)
		}
		sp := &splitPre{re: re, behavior: b, invert: c.Invert}
		if c.Pattern.Regex != nil {
			sp.fast = fastSplits[*c.Pattern.Regex]
		}
		return []preTokenizer{sp}, nil
	case "Digits":
		b := contiguous
		if c.IndividualDigits {
			b = isolated
		}
		return []preTokenizer{&splitPre{re: regexp2.MustCompile(`\p{N}`), behavior: b}}, nil
	case "ByteLevel":
		p := byteLevelPre{useRegex: c.UseRegex == nil || *c.UseRegex}
		p.addPrefixSpace = c.AddPrefixSpace == nil || *c.AddPrefixSpace
		all := []preTokenizer{p}
		if p.useRegex {
			all = append(all, &splitPre{re: regexp2.MustCompile(gpt2Pattern, regexp2.OptionMaxBacktrackingStackSize(-1)), behavior: isolated})
		}
		return all, nil
	case "Metaspace":
		m := metaspacePre{replacement: "▁", scheme: "always", cut: c.Split == nil || *c.Split}
		if c.Replacement != nil {
			if utf8.RuneCountInString(*c.Replacement) != 1 {
				return nil, fmt.Errorf("Metaspace: replacement %q is not one character", *c.Replacement)
			}
			m.replacement = *c.Replacement
		}
		switch {
		case c.PrependScheme != nil:
			m.scheme = *c.PrependScheme
		case c.AddPrefixSpace != nil && !*c.AddPrefixSpace:
			m.scheme = "never"
		}
		if m.scheme != "always" && m.scheme != "first" && m.scheme != "never" {
			return nil, fmt.Errorf("Metaspace: prepend_scheme %q is not always, first or never", m.scheme)
		}
		return []preTokenizer{m}, nil
	}
	return nil, fmt.Errorf("type %q is not supported (Split, ByteLevel, Metaspace, Digits and Sequence are)", c.Type)
}

type behavior int

const (
	isolated behavior = iota
	removed
	mergedWithPrevious
	mergedWithNext
	contiguous
)

func parseBehavior(s string) (behavior, error) {
	switch s {
	case "Isolated", "":
		return isolated, nil
	case "Removed":
		return removed, nil
	case "MergedWithPrevious":
		return mergedWithPrevious, nil
	case "MergedWithNext":
		return mergedWithNext, nil
	case "Contiguous":
		return contiguous, nil
	}
	return 0, fmt.Errorf("behavior %q is not supported", s)
}

// splitPre is the Split pre-tokenizer: each piece is cut into the matches of re and the gaps
// between them, and behavior says which parts stay and how they join.
type splitPre struct {
	re       *regexp2.Regexp
	fast     func(s string, i int) int // re matched by hand (split.go), where it can be
	behavior behavior
	invert   bool
}

type span struct {
	start, end int
	match      bool
}

func (p *splitPre) split(sc *scratch, in, out []piece) []piece {
	for _, pc := range in {
		out = p.splitOne(sc, pc, out)
	}
	return out
}

func (p *splitPre) splitOne(sc *scratch, pc piece, out []piece) []piece {
	s := pc.s
	spans := sc.spans[:0]
	defer func() { sc.spans = spans }()
	if p.fast != nil {
		for i := 0; i < len(s); {
			end := p.fast(s, i)
			spans = append(spans, span{i, end, !p.invert})
			i = end
		}
	} else {
		var ok bool
		if spans, ok = p.matches(sc, s, spans); !ok {
			// The patterns tokperf loads cannot fail on valid input (no timeout, no
			// stack limit): keep the piece whole rather than lose text.
			return append(out, pc)
		}
	}
	add := func(start, end int) []piece {
		return append(out, piece{s: s[start:end], first: pc.first && start == 0})
	}
	switch p.behavior {
	case isolated:
		for _, sp := range spans {
			out = add(sp.start, sp.end)
		}
	case removed:
		for _, sp := range spans {
			if !sp.match {
				out = add(sp.start, sp.end)
			}
		}
	case mergedWithPrevious:
		prevMatch := false
		var joined []span
		for _, sp := range spans {
			if sp.match && !prevMatch && len(joined) > 0 {
				joined[len(joined)-1].end = sp.end
			} else {
				joined = append(joined, span{sp.start, sp.end, false})
			}
			prevMatch = sp.match
		}
		for _, sp := range joined {
			out = add(sp.start, sp.end)
		}
	case mergedWithNext:
		prevMatch := false
		var joined []span
		for i := len(spans) - 1; i >= 0; i-- {
			sp := spans[i]
			if sp.match && !prevMatch && len(joined) > 0 {
				joined[len(joined)-1].start = sp.start
			} else {
				joined = append(joined, span{sp.start, sp.end, false})
			}
			prevMatch = sp.match
		}
		for i := len(joined) - 1; i >= 0; i-- {
			out = add(joined[i].start, joined[i].end)
		}
	case contiguous:
		prevMatch := false
		var joined []span
		for _, sp := range spans {
			if sp.match == prevMatch && len(joined) > 0 {
				joined[len(joined)-1].end = sp.end
			} else {
				joined = append(joined, span{sp.start, sp.end, false})
			}
			prevMatch = sp.match
		}
		for _, sp := range joined {
			out = add(sp.start, sp.end)
		}
	}
	return out
}

// matches appends to spans the matches of p.re in s and the gaps between them.
func (p *splitPre) matches(sc *scratch, s string, spans []span) ([]span, bool) {
	runes, offsets := sc.runes[:0], sc.offsets[:0]
	for i, r := range s {
		runes = append(runes, r)
		offsets = append(offsets, i)
	}
	offsets = append(offsets, len(s))
	sc.runes, sc.offsets = runes, offsets
	last := 0
	err := p.re.FindRunesMatches(runes, 0, func(m regexp2.MatchView) bool {
		idx, n, _ := m.GroupRange(0)
		if n == 0 {
			return true
		}
		start, end := offsets[idx], offsets[idx+n]
		if start > last {
			spans = append(spans, span{last, start, p.invert})
		}
		spans = append(spans, span{start, end, !p.invert})
		last = end
		return true
	})
	if err != nil {
		return spans, false
	}
	if last < len(s) {
		spans = append(spans, span{last, len(s), p.invert})
	}
	return spans, true
}

// byteLevelPre is the ByteLevel pre-tokenizer. Its mapping of bytes to printable characters
// is done once, on the vocabulary, so pieces stay raw bytes here; what is left is the prefix
// space (its regex split, when use_regex is set, follows it as a splitPre).
type byteLevelPre struct {
	addPrefixSpace, useRegex bool
}

func (p byteLevelPre) split(_ *scratch, in, out []piece) []piece {
	for _, pc := range in {
		if p.addPrefixSpace && !strings.HasPrefix(pc.s, " ") {
			pc.s = " " + pc.s
		}
		out = append(out, pc)
	}
	return out
}

// metaspacePre is the Metaspace pre-tokenizer of SentencePiece-style tokenizers: spaces become
// the replacement character (▁), one is put in front (always, or only at the start of the
// text: "first"), and pieces are cut before each one.
type metaspacePre struct {
	replacement string
	scheme      string
	cut         bool
}

func (p metaspacePre) split(_ *scratch, in, out []piece) []piece {
	for _, pc := range in {
		s := strings.ReplaceAll(pc.s, " ", p.replacement)
		if !strings.HasPrefix(s, p.replacement) && (p.scheme == "always" || p.scheme == "first" && pc.first) {
			s = p.replacement + s
		}
		if !p.cut {
			out = append(out, piece{s: s, first: pc.first})
			continue
		}
		start := 0
		for i := 1; i < len(s); i++ {
			if strings.HasPrefix(s[i:], p.replacement) {
				out = append(out, piece{s: s[start:i], first: pc.first && start == 0})
				start = i
			}
		}
		out = append(out, piece{s: s[start:], first: pc.first && start == 0})
	}
	return out
}

// A decoder rewrites the tokens of Decode, in the order of tokenizer.json's decoder.
type decoder interface {
	decode(tokens []string) []string
}

type decFunc func([]string) []string

func (f decFunc) decode(t []string) []string { return f(t) }

// byteLevelDec is the ByteLevel decoder. The tokens are raw bytes already (see
// byteLevelPre), so it has nothing left to do.
type byteLevelDec struct{}

func (byteLevelDec) decode(t []string) []string { return t }

func parseDecoder(data json.RawMessage) ([]decoder, error) {
	c, err := decodeComponent(data)
	if err != nil || c == nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		var all []decoder
		for _, d := range c.Decoders {
			ds, err := parseDecoder(d)
			if err != nil {
				return nil, err
			}
			all = append(all, ds...)
		}
		return all, nil
	case "ByteLevel":
		return []decoder{byteLevelDec{}}, nil
	case "Replace":
		if c.Pattern == nil || c.Pattern.String == nil || c.Content == nil {
			return nil, errors.New("Replace needs a String pattern and content")
		}
		old, content := *c.Pattern.String, *c.Content
		return []decoder{decFunc(func(t []string) []string {
			for i := range t {
				t[i] = strings.ReplaceAll(t[i], old, content)
			}
			return t
		})}, nil
	case "ByteFallback":
		return []decoder{decFunc(byteFallback)}, nil
	case "Fuse":
		return []decoder{decFunc(func(t []string) []string { return []string{strings.Join(t, "")} })}, nil
	case "Strip":
		if c.Content == nil || utf8.RuneCountInString(*c.Content) != 1 {
			return nil, errors.New("Strip needs a one-character content")
		}
		ch, start, stop := *c.Content, c.Start, c.Stop
		return []decoder{decFunc(func(t []string) []string {
			for i := range t {
				for n := 0; n < start && strings.HasPrefix(t[i], ch); n++ {
					t[i] = t[i][len(ch):]
				}
				for n := 0; n < stop && strings.HasSuffix(t[i], ch); n++ {
					t[i] = t[i][:len(t[i])-len(ch)]
				}
			}
			return t
		})}, nil
	case "Metaspace":
		rep := "▁"
		if c.Replacement != nil {
			rep = *c.Replacement
		}
		strip := true
		if c.PrependScheme != nil && *c.PrependScheme == "never" || c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
			strip = false
		}
		return []decoder{decFunc(func(t []string) []string {
			for i := range t {
				t[i] = strings.ReplaceAll(t[i], rep, " ")
				if i == 0 && strip {
					t[i] = strings.TrimPrefix(t[i], " ")
				}
			}
			return t
		})}, nil
	}
	return nil, fmt.Errorf("type %q is not supported", c.Type)
}

// byteFallback turns runs of <0xXX> tokens into the bytes they stand for; a run that is not
// valid UTF-8 becomes one U+FFFD per byte, as the reference does.
func byteFallback(t []string) []string {
	out := t[:0:0]
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			out = append(out, strings.Repeat("\uFFFD", len(run)))
		}
		run = run[:0]
	}
	for _, s := range t {
		if b, ok := fallbackByte(s); ok {
			run = append(run, b)
			continue
		}
		flush()
		out = append(out, s)
	}
	flush()
	return out
}

func fallbackByte(s string) (byte, bool) {
	if len(s) != 6 || !strings.HasPrefix(s, "<0x") || s[5] != '>' {
		return 0, false
	}
	var b byte
	for _, c := range s[3:5] {
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = byte(c - '0')
		case c >= 'A' && c <= 'F':
			v = byte(c-'A') + 10
		case c >= 'a' && c <= 'f':
			v = byte(c-'a') + 10
		default:
			return 0, false
		}
		b = b<<4 | v
	}
	return b, true
}
