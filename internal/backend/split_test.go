package backend

import (
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/record"
)

// The TTFT split reads the servers' real timings: llama.cpp's prompt_ms
// (native and OpenAI routes) and Ollama's prompt_eval_duration are the
// prefill, SGLang's e2e_latency − inference_time the queue, vLLM's
// metrics.queue_time_ms the queue; the rest of the TTFT is named, and the
// parts sum to it.
func TestTTFTSplitReadsServerTimings(t *testing.T) {
	t.Parallel()
	sglangEnd := `data: {"text":"a","output_ids":[5],"meta_info":{"finish_reason":null,"prompt_tokens":4,"completion_tokens":1,"cached_tokens":0}}` + "\n\n" +
		`data: {"text":"a b","output_ids":[5,6],"meta_info":{"finish_reason":{"type":"length","length":2},"prompt_tokens":4,"completion_tokens":2,"cached_tokens":0,"e2e_latency":0.25,"inference_time":0.1875}}` + "\n\n"
	vllmEnd := `data: {"id":"c","object":"text_completion","choices":[{"index":0,"text":" a","finish_reason":null}]}` + "\n\n" +
		`data: {"id":"c","object":"text_completion","choices":[{"index":0,"text":" b","finish_reason":"length"}],"metrics":{"time_to_first_token_ms":30.5,"generation_time_ms":12.0,"queue_time_ms":7.25,"mean_itl_ms":12.0,"tokens_per_second":80.0}}` + "\n\n" +
		"data: [DONE]\n\n"
	for _, tc := range []struct {
		name           string
		proto          protocol
		file, inline   string
		queue, prefill float64 // ms; 0: unknown
	}{
		{"llama.cpp /completion", llamaCpp{}, "llama-native-completion.sse", "", 0, 2.386},
		{"llama.cpp /completion timings_per_token", llamaCpp{}, "llama-native-completion-timings-per-token.sse", "", 0, 1.668},
		{"llama.cpp /v1/completions", &openAI{}, "llama-completions-usage.sse", "", 0, -1},
		{"llama.cpp /v1/chat/completions", &openAI{chat: true}, "llama-chat-usage.sse", "", 0, -1},
		{"ollama /api/generate", ollama{}, "ollama-generate.ndjson", "", 0, -1},
		{"sglang /generate", sglang{}, "", sglangEnd, 62.5, 0},
		{"vllm metrics", &openAI{}, "", vllmEnd, 7.25, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := record.New(0)
			if tc.file != "" {
				readStream(tc.proto, capture(t, tc.file), record.NewClock(), &rec, nil)
			} else {
				readStream(tc.proto, strings.NewReader(tc.inline), record.NewClock(), &rec, nil)
			}
			if !rec.OK() {
				t.Fatalf("status %s: %s", rec.Status, rec.Error)
			}
			s, ok := rec.TTFTSplit()
			if !ok {
				t.Fatal("no split")
			}
			ttft, _ := rec.TTFT()
			if s.Queue+s.Prefill+s.Rest != ttft {
				t.Errorf("split %+v does not sum to the TTFT %v", s, ttft)
			}
			if tc.prefill == -1 { // timings there, value not pinned: the capture's own
				tc.prefill = rec.Server.PromptMs
				if tc.prefill <= 0 {
					t.Fatalf("no prompt time read from %s: %+v", tc.file, rec.Server)
				}
			}
			check := func(part string, known bool, got time.Duration, want float64) {
				if known != (want > 0) || (known && (got-time.Duration(want*1e6)).Abs() > time.Microsecond) {
					t.Errorf("%s: %v (known %v), want %v ms", part, got, known, want)
				}
			}
			check("queue", s.QueueKnown, s.Queue, tc.queue)
			check("prefill", s.PrefillKnown, s.Prefill, tc.prefill)
		})
	}
}
