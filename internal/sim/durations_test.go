package sim

import (
	"net/http"
	"sync"
	"testing"
	"time"
)

// Ollama's and llama.cpp's server timings come from the engine's steps, as
// the real servers measure them: prompt time is the prefill (not the wait
// for a slot, not the request's overhead), decode time covers the n−1 steps
// after the first token, and the total is the whole request.
func TestServerTimingsMatchRealServers(t *testing.T) {
	t.Parallel()
	const n = 9
	step := time.Millisecond // tiny's decode step
	for _, tc := range []struct {
		name, engine, path, body string
	}{
		{"ollama-generate-stream", "ollama", "/api/generate", `{"prompt":"a b c","options":{"num_predict":9}}`},
		{"ollama-chat", "ollama", "/api/chat", `{"messages":[{"role":"user","content":"a b c"}],"stream":false,"options":{"num_predict":9}}`},
		{"llamacpp-stream", "llamacpp", "/completion", `{"prompt":"a b c","n_predict":9,"stream":true}`},
		{"llamacpp", "llamacpp", "/completion", `{"prompt":"a b c","n_predict":9}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := withEngine(t, tc.engine)
			p.MaxRunning = 1        // the second request waits for the first
			p.RequestOverheadMs = 7 // before the engine: in the total only
			p.Chat.PerChunkMs = 3   // writing chunks: in the total only
			serveVirtual(t, p, func(c *http.Client, _ *Server) {
				var wg sync.WaitGroup
				finals := make([]map[string]any, 2)
				for i := range finals {
					wg.Go(func() {
						time.Sleep(time.Duration(i) * time.Microsecond) // the first one first
						_, _, body := do(t, c, "POST", tc.path, tc.body)
						objs := sseObjects(t, body)
						finals[i] = objs[len(objs)-1]
					})
				}
				wg.Wait()
				for i, f := range finals {
					var prompt, decode, total time.Duration
					var count int
					if tc.engine == "ollama" {
						prompt, decode = nanos(f["prompt_eval_duration"]), nanos(f["eval_duration"])
						total, count = nanos(f["total_duration"]), int(f["eval_count"].(float64))
						if want := p.PrefillTime(int(f["prompt_eval_count"].(float64))); prompt != want {
							t.Errorf("request %d: prompt_eval_duration %v, want the prefill %v", i, prompt, want)
						}
					} else {
						tm := f["timings"].(map[string]any)
						prompt, decode = millis(tm["prompt_ms"]), millis(tm["predicted_ms"])
						count = int(tm["predicted_n"].(float64))
						if tm["predicted_per_token_ms"] != 1.0 || tm["predicted_per_second"] != 1000.0 {
							t.Errorf("request %d: %v ms and %v tok/s a token, want 1 and 1000 (over n−1 tokens)", i, tm["predicted_per_token_ms"], tm["predicted_per_second"])
						}
						if want := p.PrefillTime(int(tm["prompt_n"].(float64))); prompt != want {
							t.Errorf("request %d: prompt_ms %v, want the prefill %v", i, prompt, want)
						}
					}
					if count != n || decode != (n-1)*step {
						t.Errorf("request %d: %d tokens in %v, want %d in %v (first token excluded)", i, count, decode, n, (n-1)*step)
					}
					if tc.engine == "ollama" && total < prompt+decode+7*time.Millisecond {
						t.Errorf("request %d: total_duration %v does not hold the 7 ms overhead beyond %v", i, total, prompt+decode)
					}
				}
				if tc.engine == "ollama" && nanos(finals[1]["total_duration"]) < nanos(finals[0]["total_duration"])+(n-1)*step {
					t.Errorf("the queued request's total %v does not hold its wait (first %v)", nanos(finals[1]["total_duration"]), nanos(finals[0]["total_duration"]))
				}
			})
		})
	}
}

func nanos(v any) time.Duration { return time.Duration(v.(float64)) }

func millis(v any) time.Duration {
	return time.Duration(v.(float64) * float64(time.Millisecond))
}
