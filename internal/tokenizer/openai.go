package tokenizer

import (
	"sync"

	"github.com/dlclark/regexp2/v2"
	"github.com/tiktoken-go/tokenizer/codec"
)

// OpenAI's encodings are encoded by this package's own BPE, by tiktoken's rule, with the
// vocabularies of github.com/tiktoken-go/tokenizer (compiled in). That module's own encoder
// is not used: it splits some whitespace runs and control characters differently from
// tiktoken (3 of the 245 golden texts for o200k_base).

type encoding struct {
	pattern string
	codec   func() *codec.Codec
	special map[string]int // decoded, never matched in the text (encode_ordinary)
}

var encodings = map[string]encoding{
	"o200k_base": {
		pattern: o200kPattern,
		codec:   codec.NewO200kBase,
		special: map[string]int{"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
	},
	"cl100k_base": {
		pattern: llama3Pattern, // the same split
		codec:   codec.NewCl100kBase,
		special: map[string]int{"<|endoftext|>": 100257, "<|fim_prefix|>": 100258, "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276},
	},
}

var (
	encodingsMu     sync.Mutex
	encodingsLoaded = map[string]*hf{}
)

// openAI returns the compiled-in encoding called name; it is built once, on first use
// (o200k_base: about 0.2 s).
func openAI(name string) (Tokenizer, bool) {
	e, ok := encodings[name]
	if !ok {
		return nil, false
	}
	encodingsMu.Lock()
	defer encodingsMu.Unlock()
	if t := encodingsLoaded[name]; t != nil {
		return t, true
	}
	t := e.build(name)
	encodingsLoaded[name] = t
	return t, true
}

func (e encoding) build(name string) *hf {
	c := e.codec()
	// The codec keeps its vocabulary to itself; decoding each id reads it out.
	vocab := make(map[string]int, 1<<18)
	var tokens []string
	for id := 0; ; id++ {
		s, err := c.Decode([]uint{uint(id)})
		if err != nil {
			break
		}
		vocab[s] = id
		tokens = append(tokens, s)
	}
	for s, id := range e.special {
		for len(tokens) <= id {
			tokens = append(tokens, "")
		}
		tokens[id] = s
	}
	t := &hf{
		name:      name,
		byteLevel: true,
		pre: []preTokenizer{&splitPre{
			re:       regexp2.MustCompile(e.pattern, regexp2.OptionMaxBacktrackingStackSize(-1)),
			fast:     fastSplits[e.pattern],
			behavior: removed, invert: true, // only the matches, as tiktoken's find_iter
		}},
		model:    &bpe{vocab: vocab, byteLevel: true, ignoreMerges: true, byRank: true, unk: -1},
		tokens:   tokens,
		plainDec: true,
	}
	t.scratches.New = func() any { return new(scratch) }
	return t
}
