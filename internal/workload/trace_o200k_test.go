package workload_test

import (
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/tokenizer"
	"github.com/tokperf/tokperf/internal/workload"
)

// With a real tokenizer (o200k_base) a trace's prompts are exactly their
// input_length, and two requests that share their first two hash ids start
// with the same two blocks of text, each exactly the block size.
func TestTracePromptsO200k(t *testing.T) {
	t.Parallel()
	tok, err := tokenizer.Load("o200k_base")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := workload.ReadTrace(strings.NewReader(`{"timestamp": 0, "input_length": 1000, "output_length": 5, "hash_ids": [7, 8, 9]}
{"timestamp": 1, "input_length": 900, "output_length": 5, "hash_ids": [7, 8, 10]}
{"timestamp": 2, "input_length": 777, "output_length": 5}
`), "t.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.New(workload.Options{Trace: tr, BlockSize: 384, Seed: 9, Tokenizer: tok})
	if err != nil {
		t.Fatal(err)
	}
	var prompts []string
	for i, r := range tr.Requests {
		req := w.Request(i)
		if n := tok.Count(req.Prompt); n != r.Input || req.PromptTokens != n {
			t.Errorf("request %d: %d tokens by o200k_base (said %d), want %d", i, n, req.PromptTokens, r.Input)
		}
		prompts = append(prompts, req.Prompt)
	}
	// The common prefix of requests 0 and 1 holds two blocks: 768 tokens
	// or more (more where the third blocks happen to start alike).
	common := 0
	for common < min(len(prompts[0]), len(prompts[1])) && prompts[0][common] == prompts[1][common] {
		common++
	}
	if n := tok.Count(prompts[0][:common]); n < 2*384 || n > 2*384+5 {
		t.Errorf("requests 0 and 1 share %d tokens of text, want the two blocks' 768", n)
	}
}
