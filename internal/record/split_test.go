package record

import (
	"testing"
	"time"
)

func TestTTFTSplit(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	rec := func(srv *ServerTiming) *Record {
		r := New(1)
		r.Scheduled, r.Sent, r.Connect = 10*ms, 17*ms, 3*ms
		r.AddChunk(117*ms, 1) // TTFT 100 ms
		r.Server = srv
		return &r
	}
	for _, tc := range []struct {
		name                 string
		srv                  *ServerTiming
		queue, prefill, rest time.Duration
		qKnown, pKnown       bool
	}{
		{"nothing reported", nil, 0, 0, 100 * ms, false, false},
		{"llama.cpp prompt_ms", &ServerTiming{PromptMs: 61.25, DecodeMs: 40}, 0, 61250 * time.Microsecond, 38750 * time.Microsecond, false, true},
		{"queue and prefill", &ServerTiming{QueueMs: 30, PromptMs: 50}, 30 * ms, 50 * ms, 20 * ms, true, true},
		{"queue only", &ServerTiming{QueueMs: 12.5, E2EMs: 900}, 12500 * time.Microsecond, 0, 87500 * time.Microsecond, true, false},
		// A server whose rounded clock says more than the client saw
		// leaves a negative rest: shown, not hidden by a clamp.
		{"server says more", &ServerTiming{QueueMs: 60, PromptMs: 41}, 60 * ms, 41 * ms, -1 * ms, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := rec(tc.srv)
			s, ok := r.TTFTSplit()
			if !ok {
				t.Fatal("no split for a request with a token")
			}
			if s.Queue != tc.queue || s.Prefill != tc.prefill || s.Rest != tc.rest || s.QueueKnown != tc.qKnown || s.PrefillKnown != tc.pKnown {
				t.Errorf("split %+v, want queue %v (%v) prefill %v (%v) rest %v", s, tc.queue, tc.qKnown, tc.prefill, tc.pKnown, tc.rest)
			}
			ttft, _ := r.TTFT()
			if sum := s.Queue + s.Prefill + s.Rest; sum != ttft {
				t.Errorf("parts sum to %v, TTFT is %v", sum, ttft)
			}
			if s.ClientWait+s.Connect != r.ClientQueue() || s.Connect != 3*ms {
				t.Errorf("client wait %v + connect %v, client queue %v", s.ClientWait, s.Connect, r.ClientQueue())
			}
		})
	}
	none := New(2)
	if _, ok := none.TTFTSplit(); ok {
		t.Error("a request with no token has a split")
	}
}
