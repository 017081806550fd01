package backend

import (
	"testing"

	"github.com/tokperf/tokperf/internal/sim"
)

// The server's tokenizer round-trips through both engines' routes (vLLM
// "prompt", llama.cpp "content"), and an engine without them is refused.
func TestServerTokenizerRoutes(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"vllm", "llamacpp"} {
		t.Run(engine, func(t *testing.T) {
			p, err := sim.ParseProfile("p.yaml", []byte("name: p\nengine: "+engine+"\nmodel: m\ndecode: {linear: {a_ms: 1, c_ms: 0}}\nprefill: {per_token_us: 1}\n"))
			if err != nil {
				t.Fatal(err)
			}
			_, url, stop, err := sim.Start(t.Context(), p, "127.0.0.1:0", sim.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			tok, err := NewServerTokenizer(t.Context(), NewClient(1, nil), url, engine, "m", "")
			if err != nil {
				t.Fatal(err)
			}
			ids := tok.Encode("the quick brown fox")
			if len(ids) != 4 || tok.Count("a b") != 2 || tok.Decode(ids) != "the quick brown fox" || tok.Err() != nil {
				t.Errorf("ids %v, decode %q, err %v", ids, tok.Decode(ids), tok.Err())
			}
		})
	}
	if _, err := NewServerTokenizer(t.Context(), NewClient(1, nil), "http://127.0.0.1:1", "tgi", "", ""); err == nil {
		t.Error("an engine without tokenize routes was accepted")
	}
}
