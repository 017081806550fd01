package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// bpe is a BPE model: a piece starts as one symbol per byte (byte-level) or per character
// (SentencePiece-style, with bytes as <0xXX> tokens where a character is not in the
// vocabulary), and the adjacent pair with the lowest merge rank is merged, leftmost first,
// until no pair has a merge. That is the Hugging Face model's order exactly.
type bpe struct {
	vocab        map[string]int // piece text as the encoder sees it (raw bytes when byte-level) → id
	merges       map[uint64]merge
	byteIDs      [256]int // byte-level: the id of each single byte, -1 where none
	fallback     [256]int // byte_fallback: the id of <0xXX>, -1 where none
	byteLevel    bool
	byteFallback bool
	ignoreMerges bool
	fuseUnk      bool
	unk          int // -1: unknown symbols are dropped, as the reference does with no unk_token
	// byRank: there is no merges list; two parts merge when their bytes together are a
	// token, lowest id first (tiktoken's rule, which the OpenAI encodings are defined by).
	byRank bool
}

type merge struct {
	rank, id int
}

const noMerge = math.MaxInt

func pairKey(a, b int) uint64 { return uint64(a)<<32 | uint64(uint32(b)) }

// newBPE builds the model from the vocabulary as written (vocab), the same vocabulary keyed as
// the encoder sees pieces (raw: raw bytes for byte-level), and the file's model section.
func newBPE(vocab, raw map[string]int, m *modelJSON, byteLevel bool) (*bpe, error) {
	b := &bpe{vocab: raw, byteLevel: byteLevel, byteFallback: m.ByteFallback, ignoreMerges: m.IgnoreMerges, fuseUnk: m.FuseUnk, unk: -1}
	for i := range 256 {
		b.byteIDs[i], b.fallback[i] = -1, -1
		if id, ok := raw[string([]byte{byte(i)})]; ok && byteLevel {
			b.byteIDs[i] = id
		}
		if id, ok := vocab[fmt.Sprintf("<0x%02X>", i)]; ok {
			b.fallback[i] = id
		}
	}
	if m.UnkToken != nil {
		id, ok := vocab[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model.unk_token %q is not in the vocabulary", *m.UnkToken)
		}
		b.unk = id
	}
	pairs, err := parseMerges(m.Merges)
	if err != nil {
		return nil, err
	}
	b.merges = make(map[uint64]merge, len(pairs))
	for i, p := range pairs {
		l, ok1 := vocab[p[0]]
		r, ok2 := vocab[p[1]]
		id, ok3 := vocab[p[0]+p[1]]
		if !ok1 || !ok2 || !ok3 {
			missing := p[0]
			switch {
			case !ok2:
				missing = p[1]
			case !ok3:
				missing = p[0] + p[1]
			}
			return nil, fmt.Errorf("model.merges[%d] %q %q: %q is not in the vocabulary", i, p[0], p[1], missing)
		}
		b.merges[pairKey(l, r)] = merge{rank: i, id: id} // a repeated pair: the later wins, as in the reference
	}
	return b, nil
}

// parseMerges reads model.merges in either form the reference writes: "a b" strings (older
// files) or ["a", "b"] pairs (newer ones, which allow spaces inside tokens).
func parseMerges(data json.RawMessage) ([][2]string, error) {
	if len(data) == 0 || string(data) == "null" {
		return nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, errors.New("model.merges is not a list")
	}
	pairs := make([][2]string, len(list))
	for i, raw := range list {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			l, r, ok := strings.Cut(s, " ")
			if !ok || strings.Contains(r, " ") {
				return nil, fmt.Errorf("model.merges[%d] %q is not two tokens separated by a space", i, s)
			}
			pairs[i] = [2]string{l, r}
			continue
		}
		var p []string
		if err := json.Unmarshal(raw, &p); err != nil || len(p) != 2 {
			return nil, fmt.Errorf("model.merges[%d] is neither \"a b\" nor [\"a\", \"b\"]", i)
		}
		pairs[i] = [2]string{p[0], p[1]}
	}
	return pairs, nil
}

// encode emits the ids of one pre-tokenized piece.
func (b *bpe) encode(sc *scratch, s string, emit func(int)) {
	if s == "" {
		return
	}
	if b.ignoreMerges {
		if id, ok := b.vocab[s]; ok {
			emit(id)
			return
		}
	}
	if b.byRank {
		if len(s) >= longPiece {
			b.mergeHeap(sc, s, nil, emit)
			return
		}
		b.mergeByRank(sc, s, emit)
		return
	}
	if ids, ok := sc.words[s]; ok {
		for _, id := range ids {
			emit(id)
		}
		return
	}
	sym := b.symbols(sc.sym[:0], s)
	if len(sym) >= longPiece {
		b.mergeHeap(sc, s, sym, emit)
		sc.sym = sym
		return
	}
	if len(sym) > 1 {
		sym = b.mergeAll(sc, sym)
	}
	for _, id := range sym {
		emit(id)
	}
	sc.sym = sym
	sc.remember(s, sym)
}

// cachedWords bounds each scratch's cache of merged pieces. Text repeats its words, so most
// pieces are found there; one scratch per goroutine at a time means no lock.
const cachedWords = 1 << 13

// remember caches the ids of a short piece.
func (sc *scratch) remember(s string, ids []int) {
	if len(s) > 24 {
		return
	}
	if sc.words == nil || len(sc.words) >= cachedWords {
		sc.words = make(map[string][]int, cachedWords)
	}
	sc.words[strings.Clone(s)] = slices.Clone(ids)
}

// symbols appends the starting symbols of s.
func (b *bpe) symbols(sym []int, s string) []int {
	if b.byteLevel {
		for i := 0; i < len(s); i++ {
			if id := b.byteIDs[s[i]]; id >= 0 {
				sym = append(sym, id)
			} else {
				sym = b.unknown(sym)
			}
		}
		return sym
	}
	for i := 0; i < len(s); {
		_, n := utf8.DecodeRuneInString(s[i:])
		ch := s[i : i+n]
		i += n
		if id, ok := b.vocab[ch]; ok {
			sym = append(sym, id)
			continue
		}
		if b.byteFallback && b.hasFallback(ch) {
			for j := 0; j < len(ch); j++ {
				sym = append(sym, b.fallback[ch[j]])
			}
			continue
		}
		sym = b.unknown(sym)
	}
	return sym
}

func (b *bpe) hasFallback(ch string) bool {
	for j := 0; j < len(ch); j++ {
		if b.fallback[ch[j]] < 0 {
			return false
		}
	}
	return true
}

func (b *bpe) unknown(sym []int) []int {
	if b.unk < 0 {
		return sym
	}
	if b.fuseUnk && len(sym) > 0 && sym[len(sym)-1] == b.unk {
		return sym
	}
	return append(sym, b.unk)
}

// mergeAll merges sym in place. ranks[i] is the rank of the pair sym[i], sym[i+1], and
// next[i] the id it merges into.
func (b *bpe) mergeAll(sc *scratch, sym []int) []int {
	ranks := sc.ranks[:0]
	next := sc.ids[:0]
	for i := 0; i+1 < len(sym); i++ {
		m, ok := b.merges[pairKey(sym[i], sym[i+1])]
		if !ok {
			m.rank = noMerge
		}
		ranks = append(ranks, m.rank)
		next = append(next, m.id)
	}
	for {
		best := -1
		lowest := noMerge
		for i, r := range ranks {
			if r < lowest {
				best, lowest = i, r
			}
		}
		if best < 0 {
			break
		}
		sym[best] = next[best]
		sym = append(sym[:best+1], sym[best+2:]...)
		ranks = append(ranks[:best], ranks[best+1:]...)
		next = append(next[:best], next[best+1:]...)
		if best < len(ranks) {
			ranks[best], next[best] = b.pair(sym[best], sym[best+1])
		}
		if best > 0 {
			ranks[best-1], next[best-1] = b.pair(sym[best-1], sym[best])
		}
	}
	sc.ranks, sc.ids = ranks, next
	return sym
}

func (b *bpe) pair(l, r int) (rank, id int) {
	m, ok := b.merges[pairKey(l, r)]
	if !ok {
		return noMerge, 0
	}
	return m.rank, m.id
}

// byteLevelBytes maps each character GPT-2's byte-level encoding writes to
// the byte it stands for: printable Latin-1 bytes stand for themselves, the
// others for 256 and up, in order.
var byteLevelBytes = func() map[rune]byte {
	var runes [256]rune
	bytes := make(map[rune]byte, 256)
	n := 0
	for i := range 256 {
		if (i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || (i >= 0xAE && i <= 0xFF) {
			runes[i] = rune(i)
		} else {
			runes[i] = rune(256 + n)
			n++
		}
		bytes[runes[i]] = byte(i)
	}
	return bytes
}()

// fromByteLevel turns a byte-level vocabulary string into the bytes it stands for.
func fromByteLevel(s string) (string, bool) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		c, ok := byteLevelBytes[r]
		if !ok {
			return "", false
		}
		out = append(out, c)
	}
	return string(out), true
}

// mergeByRank is encode for a byRank model. starts[i] is where part i begins; ranks[i] is the
// rank of parts i and i+1 together.
func (b *bpe) mergeByRank(sc *scratch, s string, emit func(int)) {
	starts, ranks := sc.sym[:0], sc.ranks[:0]
	for i := 0; i <= len(s); i++ {
		starts = append(starts, i)
	}
	rank := func(i int) int { // rank of parts i, i+1; starts[i+2] must exist
		if id, ok := b.vocab[s[starts[i]:starts[i+2]]]; ok {
			return id
		}
		return noMerge
	}
	for i := 0; i+2 < len(starts); i++ {
		ranks = append(ranks, rank(i))
	}
	for len(ranks) > 0 {
		best, lowest := -1, noMerge
		for i, r := range ranks {
			if r < lowest {
				best, lowest = i, r
			}
		}
		if best < 0 {
			break
		}
		starts = append(starts[:best+1], starts[best+2:]...)
		ranks = append(ranks[:best], ranks[best+1:]...)
		if best < len(ranks) {
			ranks[best] = rank(best)
		}
		if best > 0 {
			ranks[best-1] = rank(best - 1)
		}
	}
	for i := 0; i+1 < len(starts); i++ {
		if id, ok := b.vocab[s[starts[i]:starts[i+1]]]; ok { // every byte is a token
			emit(id)
		}
	}
	sc.sym, sc.ranks = starts, ranks
}

// longPiece is the length in symbols from which merging uses a heap: the scans above cost
// O(n²), which a prompt with no pre-tokenizer (Llama 2's whole text is one piece) or a long run
// of one letter would pay in full.
const longPiece = 64

// node is a symbol in mergeHeap's list. start is its first byte in the piece (byRank), ver
// counts its merges so that stale heap entries can be told apart.
type node struct {
	id, start, prev, next, ver int
}

type candidate struct {
	rank, pos, right, verL, verR, id int
}

// mergeHeap merges the symbols of s (sym, or s's bytes when byRank) in the same order as
// mergeAll and mergeByRank, in O(n log n), and emits the result.
func (b *bpe) mergeHeap(sc *scratch, s string, sym []int, emit func(int)) {
	n := len(sym)
	if b.byRank {
		n = len(s)
	}
	nodes := slices.Grow(sc.nodes[:0], n)[:n]
	h := sc.heap[:0]
	defer func() { sc.nodes, sc.heap = nodes, h }()
	for i := range nodes {
		nodes[i] = node{start: i, prev: i - 1, next: i + 1}
		if !b.byRank {
			nodes[i].id = sym[i]
		}
	}
	nodes[n-1].next = -1
	end := func(i int) int {
		if nodes[i].next < 0 {
			return len(s)
		}
		return nodes[nodes[i].next].start
	}
	rankOf := func(l int) (candidate, bool) {
		r := nodes[l].next
		if r < 0 {
			return candidate{}, false
		}
		var rank, id int
		if b.byRank {
			v, ok := b.vocab[s[nodes[l].start:end(r)]]
			if !ok {
				return candidate{}, false
			}
			rank, id = v, v
		} else {
			m, ok := b.merges[pairKey(nodes[l].id, nodes[r].id)]
			if !ok {
				return candidate{}, false
			}
			rank, id = m.rank, m.id
		}
		return candidate{rank: rank, pos: l, right: r, verL: nodes[l].ver, verR: nodes[r].ver, id: id}, true
	}
	for i := 0; i+1 < n; i++ {
		if c, ok := rankOf(i); ok {
			h = append(h, c)
		}
	}
	h.init()
	for len(h) > 0 {
		c := h.pop()
		l := &nodes[c.pos]
		if l.ver != c.verL || l.next != c.right || nodes[c.right].ver != c.verR {
			continue // one side has merged since
		}
		r := &nodes[c.right]
		l.id = c.id
		l.ver++
		l.next = r.next
		if r.next >= 0 {
			nodes[r.next].prev = c.pos
		}
		r.ver = -1 // gone
		if p := l.prev; p >= 0 {
			if c, ok := rankOf(p); ok {
				h.push(c)
			}
		}
		if c, ok := rankOf(c.pos); ok {
			h.push(c)
		}
	}
	for i := 0; i >= 0; i = nodes[i].next {
		if b.byRank {
			if id, ok := b.vocab[s[nodes[i].start:end(i)]]; ok {
				emit(id)
			}
			continue
		}
		emit(nodes[i].id)
	}
}

// candidates is a binary min-heap by rank, then position (leftmost first).
type candidates []candidate

func (h candidates) less(i, j int) bool {
	return h[i].rank < h[j].rank || h[i].rank == h[j].rank && h[i].pos < h[j].pos
}

func (h candidates) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *candidates) push(c candidate) {
	*h = append(*h, c)
	for i := len(*h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		(*h)[i], (*h)[p] = (*h)[p], (*h)[i]
		i = p
	}
}

func (h *candidates) pop() candidate {
	old := *h
	c := old[0]
	last := len(old) - 1
	old[0] = old[last]
	*h = old[:last]
	h.down(0)
	return c
}

func (h candidates) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
