package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// words is a prompt of the words prefix0 … prefix(n−1).
func words(prefix string, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return strings.Join(w, " ")
}

func cachedProfile(t *testing.T, engine string) *Profile {
	p := withEngine(t, engine)
	p.Prefill.PerTokenUs = 100 // so a cached token saves 100 µs
	p.PrefixCache, p.PrefixCacheBlock, p.PrefixCacheTokens = true, 16, p.KVTokens
	return p
}

// The same prompt twice: the second skips the prefill of its cached blocks
// (12 of 16 tokens: 192 of 200, the last token always computed), so its
// TTFT is lower by exactly their prefill time. A prompt that differs in its
// first word hits nothing (the block hashes are chained); one that shares
// its first 100 words hits their 6 whole blocks.
func TestPrefixCacheSkipsCachedPrefill(t *testing.T) {
	t.Parallel()
	p := cachedProfile(t, "vllm")
	a := words("a", 200)
	serveVirtual(t, p, func(c *http.Client, s *Server) {
		send := func(prompt string) (ttft time.Duration, cached int) {
			t.Helper()
			_, _, body := do(t, c, "POST", "/v1/completions", `{"prompt":"`+prompt+`","max_tokens":2,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)
			objs := sseObjects(t, body)
			var u struct {
				Usage usage `json:"usage"`
			}
			b, _ := json.Marshal(objs[len(objs)-1])
			json.Unmarshal(b, &u)
			if u.Usage.PromptTokensDetails == nil {
				t.Fatalf("no prompt_tokens_details in %s", b)
			}
			tr := s.Trace()
			last := tr[len(tr)-1]
			return last.Chunks[0].At.Sub(last.Arrived), u.Usage.PromptTokensDetails.CachedTokens
		}
		cold, c0 := send(a)
		warm, c1 := send(a)
		if c0 != 0 || c1 != 192 {
			t.Errorf("cached tokens %d then %d, want 0 then 192", c0, c1)
		}
		if saved, want := cold-warm, p.PrefillTime(200)-p.PrefillTime(8); saved != want || cold != p.PrefillTime(200) {
			t.Errorf("TTFT %v cold, %v warm: saved %v, want the prefill of 192 tokens, %v", cold, warm, saved, want)
		}
		if _, n := send("x " + words("a", 200)[3:]); n != 0 {
			t.Errorf("a prompt differing in its first word hit %d cached tokens, want 0", n)
		}
		if _, n := send(words("a", 100) + " " + words("b", 100)); n != 96 {
			t.Errorf("a prompt sharing 100 words hit %d cached tokens, want 96 (6 blocks)", n)
		}
		_, _, m := do(t, c, "GET", "/metrics", "")
		for _, line := range []string{"vllm:prefix_cache_queries_total 800\n", "vllm:prefix_cache_hits_total 288\n"} {
			if !strings.Contains(string(m), line) {
				t.Errorf("/metrics lacks %q", line)
			}
		}
	})
}

// SGLang reports the hit in meta_info.cached_tokens and cache_hit_rate;
// llama.cpp in cache_n, leaving the cached tokens out of prompt_n.
func TestPrefixCacheNativeReports(t *testing.T) {
	t.Parallel()
	prompt := words("a", 200)
	t.Run("sglang", func(t *testing.T) {
		serveVirtual(t, cachedProfile(t, "sglang"), func(c *http.Client, _ *Server) {
			var meta []sglangMeta
			for range 2 {
				_, _, body := do(t, c, "POST", "/generate", `{"text":"`+prompt+`","sampling_params":{"max_new_tokens":2}}`)
				var ev sglangEvent
				if err := json.Unmarshal(body, &ev); err != nil {
					t.Fatal(err)
				}
				meta = append(meta, ev.MetaInfo)
			}
			if meta[0].CachedTokens != 0 || meta[1].CachedTokens != 192 {
				t.Errorf("cached_tokens %d then %d, want 0 then 192", meta[0].CachedTokens, meta[1].CachedTokens)
			}
			_, _, m := do(t, c, "GET", "/metrics", "")
			if !strings.Contains(string(m), "sglang:cache_hit_rate 0.48\n") {
				t.Errorf("/metrics lacks a hit rate of 192/400")
			}
		})
	})
	t.Run("llamacpp", func(t *testing.T) {
		serveVirtual(t, cachedProfile(t, "llamacpp"), func(c *http.Client, _ *Server) {
			var tm []map[string]any
			for range 2 {
				_, _, body := do(t, c, "POST", "/completion", `{"prompt":"`+prompt+`","n_predict":2}`)
				var ev struct{ Timings map[string]any }
				if err := json.Unmarshal(body, &ev); err != nil {
					t.Fatal(err)
				}
				tm = append(tm, ev.Timings)
			}
			if tm[1]["cache_n"] != 192.0 || tm[1]["prompt_n"] != 8.0 || tm[0]["cache_n"] != 0.0 {
				t.Errorf("timings %v then %v, want cache_n 192 and prompt_n 8 the second time", tm[0], tm[1])
			}
		})
	})
}

// The cache keeps what fits in its budget, least recently used out first.
func TestPrefixCacheEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	p := cachedProfile(t, "vllm")
	p.PrefixCacheTokens = 32 // one 40-word prompt's two blocks
	a, b := words("a", 40), words("b", 40)
	serveVirtual(t, p, func(c *http.Client, _ *Server) {
		var got []int
		for _, prompt := range []string{a, b, b, a, a} {
			_, _, body := do(t, c, "POST", "/v1/completions", `{"prompt":"`+prompt+`","max_tokens":1}`)
			var r struct{ Usage usage }
			json.Unmarshal(body, &r)
			got = append(got, r.Usage.PromptTokensDetails.CachedTokens)
		}
		if want := []int{0, 0, 32, 0, 32}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("cached tokens %v, want %v", got, want)
		}
	})
}

func TestBlockHashesChain(t *testing.T) {
	t.Parallel()
	keys := func(text string) []uint64 { return (&Server{}).textKeys(nil, text) }
	x := blockHashes(keys(words("a", 40)), 16)
	y := blockHashes(keys("z "+words("a", 40)[3:]), 16)
	z := blockHashes(keys(words("a", 32)+" other words"), 16)
	if len(x) != 2 || x[0] == y[0] || x[1] == y[1] || x[0] != z[0] || x[1] != z[1] {
		t.Errorf("hashes %x, %x, %x: want two blocks, none shared after a different first word, both shared with the same 32 words", x, y, z)
	}
}
