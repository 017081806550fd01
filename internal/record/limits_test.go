package record

import (
	"encoding/json"
	"testing"
)

func TestStatedLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, engine, info string
		want               Limits
	}{
		{"sglang", "sglang", `{"max_running_requests": 48, "chunked_prefill_size": 8192, "max_total_num_tokens": 600000, "tp_size": 8}`,
			Limits{MaxRunning: 48, ChunkedPrefill: 8192, KVTokens: 600000}},
		{"sglang unchunked", "sglang", `{"chunked_prefill_size": -1}`, Limits{ChunkedPrefill: -1}},
		{"llamacpp slots", "llamacpp", `{"total_slots": 4, "build_info": "b10573"}`, Limits{MaxRunning: 4}},
		{"not a number", "llamacpp", `{"total_slots": "4"}`, Limits{}},
		{"engine states none", "vllm", `{"max_running_requests": 4}`, Limits{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var info map[string]any
			if err := json.Unmarshal([]byte(tc.info), &info); err != nil {
				t.Fatal(err)
			}
			got := StatedLimits(Server{Engine: tc.engine, Info: info})
			if got.MaxRunning != tc.want.MaxRunning || got.ChunkedPrefill != tc.want.ChunkedPrefill || got.KVTokens != tc.want.KVTokens {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if n := count(tc.want); len(got.From) != n {
				t.Errorf("From %v: want %d sources", got.From, n)
			}
		})
	}
}

func count(l Limits) int {
	n := 0
	for _, v := range []int{l.MaxRunning, l.ChunkedPrefill, l.KVTokens} {
		if v != 0 {
			n++
		}
	}
	return n
}
