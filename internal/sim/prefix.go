package sim

import (
	"container/list"
	"encoding/binary"
	"hash/fnv"
	"strings"
)

// blockHashes splits a prompt into blocks of size tokens (the simulator's
// word tokens) and returns a hash for each full block that covers the block
// and every block before it, so equal hashes mean equal prefixes.
func blockHashes(prompt string, size int) []uint64 {
	words := strings.Fields(prompt)
	out := make([]uint64, 0, len(words)/size)
	var prev uint64
	h := fnv.New64a()
	var seed [8]byte
	for i := 0; i+size <= len(words); i += size {
		h.Reset()
		binary.LittleEndian.PutUint64(seed[:], prev)
		h.Write(seed[:])
		for _, w := range words[i : i+size] {
			h.Write([]byte(w))
			h.Write([]byte{' '})
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
