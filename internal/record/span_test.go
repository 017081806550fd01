package record

import (
	"testing"
	"time"
)

func TestDecodeSpan(t *testing.T) {
	t.Parallel()
	rec := func(out int, chunks ...Chunk) *Record {
		r := New(1)
		for _, c := range chunks {
			r.AddChunk(c.At, c.Tokens)
		}
		r.OutputTokens = out
		return &r
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		r    *Record
		d    time.Duration
		n    int
		ok   bool
	}{
		{"flowing", rec(5, Chunk{10 * ms, 1}, Chunk{20 * ms, 2}, Chunk{30 * ms, 2}), 20 * ms, 4, true},
		{"one piece", rec(5, Chunk{10 * ms, 1}, Chunk{10 * ms, 4}), 0, 4, false},
		{"backwards", rec(5, Chunk{10 * ms, 1}, Chunk{10*ms - 26, 4}), -26, 4, false},
		{"one chunk", rec(4, Chunk{10 * ms, 4}), 0, 0, false},
		{"no chunks", rec(0), 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, n, ok := tc.r.DecodeSpan()
			if d != tc.d || n != tc.n || ok != tc.ok {
				t.Errorf("DecodeSpan() = %v, %d, %v; want %v, %d, %v", d, n, ok, tc.d, tc.n, tc.ok)
			}
		})
	}
}
