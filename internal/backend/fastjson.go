package backend

import (
	"bytes"
)

// chunkFacts is what the client reads from one OpenAI stream chunk.
type chunkFacts struct {
	content, reasoning, tool bool
	finish                   string
	hasFinish                bool
	choices                  int
	usage                    bool
	prompt, completion       int
	cached                   int
	reasoningTokens          int // usage.completion_tokens_details.reasoning_tokens
}

// fastChunk reads an OpenAI chunk without encoding/json: one pass, no
// allocation. It returns false whenever the chunk holds anything it does
// not read exactly as encoding/json would (an error object, timings, metrics, a key
// with escapes or another type than expected, invalid JSON); the caller
// then decodes the chunk the slow way. A differential fuzz test holds the
// two paths to the same result.
func fastChunk(data []byte) (f chunkFacts, ok bool) {
	s := scanner{b: data}
	s.ws()
	ok = s.object(func(key []byte) bool {
		switch {
		case fold(key, "choices"):
			f.choices, f.content, f.reasoning, f.tool, f.hasFinish, f.finish = 0, false, false, false, false, ""
			if s.null() {
				return true
			}
			return s.array(func() bool {
				f.choices++
				return s.object(func(key []byte) bool {
					switch {
					case fold(key, "text"):
						return s.nonEmptyString(&f.content)
					case fold(key, "finish_reason"):
						if s.null() {
							return true
						}
						v, ok := s.plainString()
						if ok && len(v) > 0 {
							f.hasFinish, f.finish = true, string(v)
						}
						return ok
					case fold(key, "delta"):
						if s.null() {
							return true
						}
						return s.object(func(key []byte) bool {
							switch {
							case fold(key, "content"):
								return s.nonEmptyString(&f.content)
							case fold(key, "reasoning_content"), fold(key, "reasoning"):
								return s.nonEmptyString(&f.reasoning)
							case fold(key, "tool_calls"):
								start := s.i
								if !s.value() {
									return false
								}
								v := bytes.TrimSpace(s.b[start:s.i]) // a call is read by the slow path (calls)
								return string(v) == "null" || string(v) == "[]"
							}
							return s.value()
						})
					}
					return s.value()
				})
			})
		case fold(key, "usage"):
			f.usage, f.prompt, f.completion, f.cached, f.reasoningTokens = false, 0, 0, 0, 0
			if s.null() {
				return true
			}
			f.usage = true
			return s.object(func(key []byte) bool {
				switch {
				case fold(key, "prompt_tokens"):
					return s.int(&f.prompt)
				case fold(key, "completion_tokens"):
					return s.int(&f.completion)
				case fold(key, "prompt_tokens_details"):
					if s.null() {
						return true
					}
					return s.object(func(key []byte) bool {
						if fold(key, "cached_tokens") {
							return s.int(&f.cached)
						}
						return s.value()
					})
				case fold(key, "completion_tokens_details"):
					if s.null() {
						return true
					}
					return s.object(func(key []byte) bool {
						if fold(key, "reasoning_tokens") {
							return s.int(&f.reasoningTokens)
						}
						return s.value()
					})
				}
				return s.value()
			})
		case fold(key, "object"):
			v, ok := s.plainString()
			return ok && !fold(v, "error")
		case fold(key, "error"), fold(key, "timings"), fold(key, "metrics"), fold(key, "message"):
			return false // read by the slow path
		}
		return s.value()
	})
	s.ws()
	return f, ok && s.i == len(s.b)
}

// fold compares a raw key with a lower-case name as encoding/json does for
// ASCII keys (the only keys the fast path accepts): ignoring letter case.
func fold(key []byte, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i, c := range key {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}

// scanner walks JSON and validates it as it goes.
type scanner struct {
	b     []byte
	i     int
	depth int
}

// maxDepth bounds nesting; deeper input goes to the slow path.
const maxDepth = 64

func (s *scanner) ws() {
	for s.i < len(s.b) && s.b[s.i] <= ' ' && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) lit(word string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		s.i += len(word)
		return true
	}
	return false
}

// null consumes a null if one is next.
func (s *scanner) null() bool {
	return s.peek() == 'n' && s.lit("null")
}

// object reads {"key": value, ...}, calling field for each key with the
// scanner at the value; keys with escapes or non-ASCII bytes are refused.
func (s *scanner) object(field func(key []byte) bool) bool {
	if s.peek() != '{' || s.depth >= maxDepth {
		return false
	}
	s.depth++
	defer func() { s.depth-- }()
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		if s.peek() != '"' {
			return false
		}
		key, ok := s.plainString()
		if !ok {
			return false
		}
		if s.peek() != ':' {
			return false
		}
		s.i++
		s.ws()
		if !field(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

func (s *scanner) array(elem func() bool) bool {
	if s.peek() != '[' || s.depth >= maxDepth {
		return false
	}
	s.depth++
	defer func() { s.depth-- }()
	s.i++
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		s.ws()
		if !elem() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// plainString reads an ASCII string without escapes and returns its bytes;
// escapes and other bytes are refused (the slow path unescapes them and
// replaces invalid UTF-8).
func (s *scanner) plainString() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		if c := s.b[j]; !plain[c] {
			if c == '"' {
				s.i = j + 1
				return s.b[start:j], true
			}
			return nil, false
		}
	}
	return nil, false
}

// plain marks the bytes a plain string holds as they are: printable ASCII
// but the quote and the backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// nonEmptyString reads a string or null and sets *set when it is not empty.
func (s *scanner) nonEmptyString(set *bool) bool {
	if s.null() {
		return true
	}
	if s.peek() != '"' {
		return false
	}
	start := s.i
	if !s.str() {
		return false
	}
	if s.i-start > 2 {
		*set = true
	}
	return true
}

// str skips a valid string, escapes included.
func (s *scanner) str() bool {
	s.i++ // the quote
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			s.i++
			if s.i >= len(s.b) {
				return false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if s.i+4 >= len(s.b) {
					return false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				s.i += 5
			default:
				return false
			}
		default:
			s.i++
		}
	}
	return false
}

// int reads a JSON integer that fits an int, as encoding/json would into int.
func (s *scanner) int(v *int) bool {
	s.ws()
	neg := false
	if s.i < len(s.b) && s.b[s.i] == '-' {
		neg = true
		s.i++
	}
	digits := s.i
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		if n > (1<<62)/10 {
			return false
		}
		n = n*10 + int(s.b[s.i]-'0')
		s.i++
	}
	if s.i == digits || (s.b[digits] == '0' && s.i-digits > 1) {
		return false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return false // a float: encoding/json refuses it for an int field
	}
	if neg {
		n = -n
	}
	*v = n
	return true
}

// value skips any valid JSON value.
func (s *scanner) value() bool {
	switch s.peek() {
	case '{':
		return s.object(func([]byte) bool { return s.value() })
	case '[':
		return s.array(s.value)
	case '"':
		return s.str()
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	}
	return s.number()
}

// number skips a JSON number.
func (s *scanner) number() bool {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := func() int {
		n := 0
		for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
			s.i++
			n++
		}
		return n
	}
	intStart := s.i
	if n := digits(); n == 0 || (n > 1 && s.b[intStart] == '0') {
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return s.i > start
}
