package workload

import (
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/tokperf/tokperf/internal/record"
)

// streamBlock is the generator streams of a trace's blocks, one a hash id.
const streamBlock = 1 << 61

// Trace is the trace the workload replays, or nil.
func (w *Workload) Trace() *Trace { return w.trace }

// BlockSize is the tokens of a trace's prefix block.
func (w *Workload) BlockSize() int { return w.block }

// traced is request i of the trace (wrapping round): its blocks' texts in
// order, the last cut to what input_length leaves, then, where the hash ids
// cover less than input_length, a part of its own starting r<i>. With a
// tokenizer the prompt is exactly input_length tokens (a block is exactly
// BlockSize; where tokens merge across a join the end is fitted); without
// one a block is BlockSize words of the fixed word list, one token a word
// on the simulator, and the count is marked an estimate.
func (w *Workload) traced(i int, req record.Request) record.Request {
	return w.blocked(i, w.trace.Requests[i%len(w.trace.Requests)], req)
}

// blocked is req with r's prompt, built of its blocks, and r's output;
// i makes the part of its own.
func (w *Workload) blocked(i int, r TraceRequest, req record.Request) record.Request {
	req.MaxTokens = r.Output
	var b strings.Builder
	left := r.Input
	for _, h := range r.Hashes {
		if left <= 0 {
			break
		}
		text := w.blockText(h)
		if left < w.block {
			text = w.cut(text, left)
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(text)
		left -= w.block
	}
	t := w.o.Tokenizer
	if t == nil {
		if left > 0 {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString("r" + strconv.Itoa(i))
			rng := rand.New(rand.NewPCG(uint64(w.seed), uint64(i)))
			for range left - 1 {
				b.WriteByte(' ')
				b.WriteString(words[rng.IntN(len(words))])
			}
		}
		req.Prompt, req.PromptTokens = b.String(), r.Input
		return req
	}
	head := b.String()
	if left > 0 {
		own := "r" + strconv.Itoa(i)
		if head != "" {
			own = head + " " + own
		}
		head = own
	}
	req.Prompt, req.PromptTokens = w.textOf(uint64(i), r.Input, head)
	if req.PromptTokens > r.Input {
		req.Prompt, req.PromptTokens = fit(t, req.Prompt, r.Input)
	}
	return req
}

// MaxBlockCache is how many bytes of block text a trace's workload keeps
// (fitted to a tokenizer, a block is slow to make again); past it blocks
// are made each time they are needed, the same text from the same seed.
const MaxBlockCache = 256 << 20

// blockText is the text of the block with hash id h: the same for the same
// seed. Words are drawn again each time (microseconds); prose fitted to a
// tokenizer is kept, up to MaxBlockCache bytes.
func (w *Workload) blockText(h int64) string {
	if w.o.Tokenizer == nil {
		rng := rand.New(rand.NewPCG(uint64(w.seed), streamBlock|uint64(h)))
		var b strings.Builder
		for k := range w.block {
			if k > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		return b.String()
	}
	if s, ok := w.texts.Load(h); ok {
		return s.(string)
	}
	text, _ := w.textOf(streamBlock|uint64(h), w.block, "")
	if w.cached.Add(int64(len(text))) <= MaxBlockCache {
		w.texts.Store(h, text)
	}
	return text
}

// cut is the first n tokens of a block's text.
func (w *Workload) cut(text string, n int) string {
	if w.o.Tokenizer != nil {
		s, _ := fit(w.o.Tokenizer, text, n)
		return s
	}
	f := strings.Fields(text)
	return strings.Join(f[:min(n, len(f))], " ")
}

// MaxPreparedTokens bounds the prompt tokens Prepare builds ahead for a
// trace (about 6 bytes each): a long production trace's later requests are
// built when sent (words: microseconds), and memory stays bounded.
const MaxPreparedTokens = 1 << 24

// tracePrepared is how many of the n requests from first Prepare builds:
// as many as fit MaxPreparedTokens, at least one.
func (w *Workload) tracePrepared(first, n int) int {
	total := 0
	for k := range n {
		total += w.trace.Requests[(first+k)%len(w.trace.Requests)].Input
		if total > MaxPreparedTokens {
			return max(k, 1)
		}
	}
	return n
}
