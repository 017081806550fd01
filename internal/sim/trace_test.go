package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"unsafe"
)

// The trace keeps the last TraceLimit requests and counts the rest, so its
// memory is bounded by the limit, not by the length of the run.
func TestTraceRingKeepsTheLastRequests(t *testing.T) {
	t.Parallel()
	const limit, sent = 4, 11
	serveVirtualWith(t, mustProfile(t, "tiny"), Options{TraceLimit: limit}, nil, func(c *http.Client, s *Server) {
		for i := range sent {
			do(t, c, "POST", "/v1/completions", fmt.Sprintf(`{"prompt":"a b","max_tokens":%d,"ignore_eos":true,"stream":true}`, i+1))
		}
		tr := s.Trace()
		if len(tr) != limit {
			t.Fatalf("trace holds %d requests, want the last %d", len(tr), limit)
		}
		for i, r := range tr {
			if want := uint64(sent - limit + 1 + i); r.ID != want || r.OutputTokens != int(want) || len(r.Chunks) != int(want) {
				t.Errorf("trace[%d]: id %d, %d tokens in %d chunks; want id %d with %d tokens, one a chunk", i, r.ID, r.OutputTokens, len(r.Chunks), want, want)
			}
			for j := 1; j < len(r.Chunks); j++ {
				if !r.Chunks[j].At.After(r.Chunks[j-1].At) || !r.Chunks[0].At.After(r.Arrived) {
					t.Errorf("trace[%d]: chunk times out of order: %+v", i, r.Chunks)
					break
				}
			}
		}
		if n := s.TraceDropped(); n != sent-limit {
			t.Errorf("dropped %d, want %d", n, sent-limit)
		}
		if n, c := len(s.trace.ring), cap(s.trace.ring); n > limit || c > limit {
			t.Errorf("ring holds %d entries in room for %d, want at most %d", n, c, limit)
		}
		_, _, body := do(t, c, "GET", "/sim/trace", "")
		var answer struct {
			Requests       []TraceRequest `json:"requests"`
			Dropped, Limit int
		}
		if err := json.Unmarshal(body, &answer); err != nil {
			t.Fatal(err)
		}
		if len(answer.Requests) != limit || answer.Dropped != sent-limit || answer.Limit != limit {
			t.Errorf("trace answer: %d requests, dropped %d, limit %d", len(answer.Requests), answer.Dropped, answer.Limit)
		}
		s.ResetTrace()
		if len(s.Trace()) != 0 || s.TraceDropped() != 0 {
			t.Errorf("after reset: %d requests, %d dropped", len(s.Trace()), s.TraceDropped())
		}
	})
	if size := unsafe.Sizeof(traceChunk{}); size > 16 {
		t.Errorf("a kept chunk costs %d bytes, want at most 16", size)
	}
}

// The trace also keeps at most TraceChunks chunks over its requests: long
// outputs drop the oldest requests first, so memory is flat within a few
// requests' worth of chunks, not only once TraceLimit requests are kept.
func TestTraceChunkBudget(t *testing.T) {
	t.Parallel()
	const budget, sent = 20, 12
	serveVirtualWith(t, mustProfile(t, "tiny"), Options{TraceChunks: budget}, nil, func(c *http.Client, s *Server) {
		for i := range sent {
			do(t, c, "POST", "/v1/completions", fmt.Sprintf(`{"prompt":"a b","max_tokens":%d,"ignore_eos":true,"stream":true}`, i+1))
		}
		tr := s.Trace()
		held := 0
		for _, r := range tr {
			held += len(r.Chunks)
		}
		// Requests of 1..12 chunks: the newest (12) and the one before
		// (11) do not fit 20 together, so only the newest is kept.
		if held > budget || len(tr) == 0 || tr[len(tr)-1].ID != sent {
			t.Fatalf("trace holds %d requests with %d chunks (last id %d), want at most %d chunks and the newest kept", len(tr), held, tr[len(tr)-1].ID, budget)
		}
		if n := s.TraceDropped(); n != int64(sent-len(tr)) || s.trace.chunks != held {
			t.Errorf("dropped %d of %d, %d chunks counted as held (%d are)", n, sent, s.trace.chunks, held)
		}
		// Small requests after big ones fill the budget again.
		for range 6 {
			do(t, c, "POST", "/v1/completions", `{"prompt":"a b","max_tokens":3,"ignore_eos":true,"stream":true}`)
		}
		if tr := s.Trace(); len(tr) != 6 || tr[0].OutputTokens != 3 {
			t.Errorf("after 6 requests of 3 chunks: %d kept, the oldest with %d tokens; want the 6", len(tr), tr[0].OutputTokens)
		}
	})
}
