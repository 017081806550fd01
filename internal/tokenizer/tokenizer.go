// Package tokenizer owns turning text into a model's token ids, offline: Hugging Face
// tokenizer.json files with a BPE model (byte-level BPE as in Llama 3, Qwen 2/3, DeepSeek V3 and
// GPT-OSS; SentencePiece-style BPE with a ▁ metaspace and byte fallback as in Llama 2 and
// Mistral) and OpenAI's encodings o200k_base and cl100k_base, compiled in. tokperf uses it to
// count tokens where a server reports none (the "tokenizer" count source of docs/METRICS.md §1).
//
//	tok, err := tokenizer.Load("/models/Qwen3-8B") // or "o200k_base", or a tokenizer.json
//	if err != nil {
//		return err
//	}
//	n := tok.Count("Hello, world!") // 4
//
// Encode adds no special tokens (no BOS, no EOS): it gives the ids of the text itself, as a
// Hugging Face tokenizer's encode(text, add_special_tokens=False). Like that reference, a
// tokenizer.json's added tokens that appear literally in the text ("<|im_end|>", "<think>") are
// matched as their single ids, which is also what a server does with a prompt it tokenizes. The
// OpenAI encodings follow tiktoken's encode_ordinary instead: "<|endoftext|>" in the text is
// ordinary text, as the OpenAI API counts a user's message. Token ids and counts equal the
// references exactly on the golden set in testdata (see golden.mjs), for Qwen3, Llama 3,
// Llama 2, DeepSeek V3, GPT-OSS, o200k_base and cl100k_base.
//
// Not read: Unigram and WordPiece models (T5, BERT: Load says so), and the "normalized" flag
// of added tokens (every added token is matched in the text as written, before normalization,
// which is the same wherever the normalizer leaves the token unchanged, as NFC does).
//
// A Tokenizer is safe for concurrent use.
package tokenizer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tokperf/tokperf/internal/infile"
)

// Tokenizer turns text into token ids and back.
type Tokenizer interface {
	// Name says which tokenizer this is, for reports: "o200k_base", or the tokenizer.json
	// and its kind ("Qwen/Qwen3-8B tokenizer.json (byte-level BPE)").
	Name() string
	// Encode returns the token ids of text, with no special tokens added.
	Encode(text string) []int
	// Decode returns the text that ids stand for. Ids it does not know are skipped. A
	// sequence cut inside a UTF-8 character gives the bytes it has, which are not valid UTF-8.
	Decode(ids []int) string
	// Count returns len(Encode(text)) without keeping the ids.
	Count(text string) int
}

// Load returns the tokenizer that spec names: "o200k_base" or "cl100k_base" (compiled in),
// a path to a tokenizer.json, or a model directory holding one.
func Load(spec string) (Tokenizer, error) {
	if t, ok := openAI(spec); ok {
		return t, nil
	}
	if spec == "" {
		return nil, errors.New("loading tokenizer: empty name (want o200k_base, cl100k_base, a tokenizer.json or a model directory)")
	}
	path := spec
	info, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("loading tokenizer %q: no such file or directory, and not an encoding tokperf knows (o200k_base, cl100k_base)", spec)
		}
		return nil, fmt.Errorf("loading tokenizer: %w", err)
	}
	if info.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	data, err := infile.ReadAll(context.Background(), path, infile.Tokenizer)
	if err != nil {
		return nil, fmt.Errorf("loading tokenizer: %w", err)
	}
	t, err := parseHF(data)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	t.name = hfName(path) + " (" + t.kind() + ")"
	return t, nil
}
