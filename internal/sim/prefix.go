package sim

import (
	"container/list"
	"encoding/binary"
	"hash/fnv"
	"strings"
)

// The prefix cache keys a prompt by its tokens: the ids of the server's
// tokenizer when it has one that encodes (Options.Tokenizer with Encode and
// Decode), else one key a word, the simulator's own token. A chat prompt's
// tokens are its template's: for each message a start, its role, a newline,
// its content's tokens and an end (4 + the content's), then a start, the
// assistant role and a newline (3): so the prompt followed by the reply's
// tokens is where the next turn's prompt starts, as in a real chat template.

// Marker keys: template tokens that no text encodes to (the top bit set).
const (
	keyStart    uint64 = 1<<63 | iota // a message starts
	keyEnd                            // a message ends
	keyNewline                        // after the role
	keyTemplate                       // a raw prompt's template tokens: keyTemplate+i
)

// message is one chat message as the template sees it.
type message struct{ role, text string }

// encoder is a tokenizer that gives ids, not only counts.
type encoder interface {
	Encode(text string) []int
	Decode(ids []int) string
}

// textKeys appends the keys of text's tokens to dst.
func (s *Server) textKeys(dst []uint64, text string) []uint64 {
	if s.enc != nil {
		for _, id := range s.enc.Encode(text) {
			dst = append(dst, uint64(id))
		}
		return dst
	}
	for _, w := range strings.Fields(text) {
		dst = append(dst, wordKey(w))
	}
	return dst
}

// wordKey is a word's key without a tokenizer; the top bit stays clear of
// the markers.
func wordKey(w string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(w))
	return h.Sum64() &^ (1 << 63)
}

// roleKey is a role's token in the template.
func roleKey(role string) uint64 { return 1<<63 | 1<<62 | wordKey(role) }

// promptKeys are a request's prompt tokens as the cache keys them: its ids
// when it came as ids, its chat template's tokens, or its template's then
// its text's.
func (s *Server) promptKeys(g *gen) []uint64 {
	switch {
	case g.ids != nil:
		out := make([]uint64, len(g.ids))
		for i, id := range g.ids {
			out[i] = uint64(id)
		}
		return out
	case g.msgs != nil:
		var out []uint64
		for _, m := range g.msgs {
			out = append(out, keyStart, roleKey(m.role), keyNewline)
			out = s.textKeys(out, m.text)
			out = append(out, keyEnd)
		}
		return append(out, keyStart, roleKey("assistant"), keyNewline)
	}
	out := make([]uint64, 0, g.wrap)
	for i := range g.wrap {
		out = append(out, keyTemplate+uint64(i))
	}
	return s.textKeys(out, g.prompt)
}

// replyKeys are the keys of a reply's text after its prompt's: a chat
// reply as the next turn's history holds it (spaces trimmed, as a message's
// content), any other as the text that continues the prompt.
func (s *Server) replyKeys(dst []uint64, g *gen, text string) []uint64 {
	if g.msgs != nil {
		text = strings.TrimSpace(text)
	}
	return s.textKeys(dst, text)
}

// blockHashes splits a token sequence into blocks of size tokens and
// returns a hash for each full block that covers the block and every block
// before it, so equal hashes mean equal prefixes.
func blockHashes(keys []uint64, size int) []uint64 {
	out := make([]uint64, 0, len(keys)/size)
	var prev uint64
	h := fnv.New64a()
	var buf [8]byte
	for i := 0; i+size <= len(keys); i += size {
		h.Reset()
		binary.LittleEndian.PutUint64(buf[:], prev)
		h.Write(buf[:])
		for _, k := range keys[i : i+size] {
			binary.LittleEndian.PutUint64(buf[:], k)
			h.Write(buf[:])
		}
		prev = h.Sum64()
		out = append(out, prev)
	}
	return out
}

// prefixCache holds the KV of prompt blocks by chained hash, least
// recently used first out, within a budget of tokens. The engine goroutine
// owns it.
type prefixCache struct {
	block, budget int
	lru           *list.List // of uint64, most recent at the front
	at            map[uint64]*list.Element
}

func newPrefixCache(block, budget int) *prefixCache {
	return &prefixCache{block: block, budget: budget, lru: list.New(), at: map[uint64]*list.Element{}}
}

// tokens is the KV the cache holds.
func (c *prefixCache) tokens() int { return c.lru.Len() * c.block }

// lookup returns how many of a prompt's tokens are cached: its leading
// blocks found, never the whole prompt (the last token is always computed,
// so a block that ends on it does not count). It marks the blocks used.
func (c *prefixCache) lookup(blocks []uint64, promptTokens int) int {
	n := 0
	for n < len(blocks) && (n+1)*c.block <= promptTokens-1 {
		if _, ok := c.at[blocks[n]]; !ok {
			break
		}
		n++
	}
	c.touch(blocks[:n])
	return n * c.block
}

// insert adds a prefilled prompt's blocks, then evicts down to the budget
// and to room tokens of free KV.
func (c *prefixCache) insert(blocks []uint64, room int) {
	c.touch(blocks)
	c.fit(room)
}

// touch makes blocks the most recently used, the first block most of all:
// eviction takes a prompt's tail before its head, as a hit needs the head.
func (c *prefixCache) touch(blocks []uint64) {
	for i := len(blocks) - 1; i >= 0; i-- {
		if e, ok := c.at[blocks[i]]; ok {
			c.lru.MoveToFront(e)
		} else {
			c.at[blocks[i]] = c.lru.PushFront(blocks[i])
		}
	}
}

// fit evicts the least recently used blocks until the cache holds at most
// its budget and at most room tokens.
func (c *prefixCache) fit(room int) {
	for c.lru.Len() > 0 && (c.tokens() > c.budget || c.tokens() > room) {
		e := c.lru.Back()
		delete(c.at, e.Value.(uint64))
		c.lru.Remove(e)
	}
}
