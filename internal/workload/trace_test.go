package workload

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func readTrace(t *testing.T, text string) *Trace {
	t.Helper()
	tr, err := ReadTrace(strings.NewReader(text), "t.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestReadTrace(t *testing.T) {
	t.Parallel()
	tr, err := LoadTrace("testdata/trace.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Requests) != 5 {
		t.Fatalf("%d requests, want 5 (the blank line skipped)", len(tr.Requests))
	}
	r := tr.Requests[2]
	if r.Line != 4 || r.At != 5500*time.Microsecond || r.Input != 600 || r.Output != 10 || len(r.Hashes) != 2 || r.Hashes[1] != 5 {
		t.Errorf("line 4 read as %+v", r)
	}
	if last := tr.Requests[4]; last.Hashes != nil || last.At != 20*time.Millisecond {
		t.Errorf("a line without hash_ids: %+v", last)
	}
	if got := tr.Arrivals(2); got[4] != 10*time.Millisecond || got[1] != 2500*time.Microsecond {
		t.Errorf("arrivals at speedup 2: %v", got)
	}
}

// Offsets count from the first timestamp, so a trace cut from a longer one
// starts at once.
func TestTraceOffsetsFromFirst(t *testing.T) {
	t.Parallel()
	tr := readTrace(t, `{"timestamp": 1000, "input_length": 1, "output_length": 1}
{"timestamp": 1250, "input_length": 1, "output_length": 1}`)
	if tr.Requests[0].At != 0 || tr.Requests[1].At != 250*time.Millisecond {
		t.Errorf("offsets %v, %v", tr.Requests[0].At, tr.Requests[1].At)
	}
}

func TestTraceErrors(t *testing.T) {
	t.Parallel()
	ok := `{"timestamp": 0, "input_length": 10, "output_length": 1}` + "\n"
	for _, c := range []struct{ text, want string }{
		{"", "t.jsonl: no requests"},
		{ok + `{"timestamp": 1, "input_length": 10}`, `t.jsonl:2: field "output_length": missing`},
		{ok + `{"input_length": 10, "output_length": 1}`, `t.jsonl:2: field "timestamp": missing`},
		{`{"timestamp": -1, "input_length": 10, "output_length": 1}`, `t.jsonl:1: field "timestamp": want a number`},
		{`{"timestamp": "0", "input_length": 10, "output_length": 1}`, `t.jsonl:1: field "timestamp": want a number`},
		{`{"timestamp": 0, "input_length": 0, "output_length": 1}`, `t.jsonl:1: field "input_length": want a whole number from 1`},
		{`{"timestamp": 0, "input_length": 1.5, "output_length": 1}`, `t.jsonl:1: field "input_length": want a whole number`},
		{`{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1, -2]}`, `t.jsonl:1: field "hash_ids[1]": want a whole number from 0`},
		{`{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": 3}`, `t.jsonl:1: field "hash_ids": want an array`},
		{ok + `[1, 2]`, `t.jsonl:2: want a JSON object`},
		{ok + `{"timestamp": 0,`, `t.jsonl:2: invalid JSON`},
		{`{"timestamp": 5, "input_length": 10, "output_length": 1}` + "\n" + ok, `t.jsonl:2: field "timestamp": 0 is before the line before's 5`},
	} {
		_, err := ReadTrace(strings.NewReader(c.text), "t.jsonl")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.text, err, c.want)
		}
	}
	tr := readTrace(t, ok+`{"timestamp": 1, "input_length": 600, "output_length": 1, "hash_ids": [1, 2, 3]}`)
	if err := tr.Check(512); err == nil || !strings.Contains(err.Error(), `t.jsonl:2: field "hash_ids": 3 blocks of 512 tokens, more than input_length 600 needs (2)`) {
		t.Errorf("too many blocks: %v", err)
	}
	if err := tr.Check(200); err != nil {
		t.Errorf("3 blocks of 200 cover 600: %v", err)
	}
}

// The stats of testdata/trace.jsonl, worked by hand at 512 tokens a block:
// 10 blocks; 0 is seen again twice and 1 once (3 seen before, all as a
// prefix); the prefix tokens are 512+512 (request 2) and 512 (request 4).
func TestTraceStats(t *testing.T) {
	t.Parallel()
	tr, err := LoadTrace("testdata/trace.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Stats(512)
	if s.Requests != 5 || s.Span != 20*time.Millisecond || s.Rate != 200 {
		t.Errorf("requests %d, span %v, rate %g", s.Requests, s.Span, s.Rate)
	}
	if s.Blocks != 10 || s.Seen != 3 || s.Prefix != 3 || s.PrefixTokens != 1536 || s.InputTokens != 4124 {
		t.Errorf("blocks %d, seen %d, prefix %d, prefix tokens %d of %d", s.Blocks, s.Seen, s.Prefix, s.PrefixTokens, s.InputTokens)
	}
	if s.Input.Min != 100 || s.Input.Max != 1300 || s.Input.P50 != 1024 || s.Output.Mean != 21 {
		t.Errorf("lengths %+v %+v", s.Input, s.Output)
	}
	// Gaps 5, 0.5, 6.5, 8 ms: mean 5, squared deviations 0, 20.25, 2.25, 9: variance 7.875.
	if want := math.Sqrt(7.875) / 5; math.Abs(s.GapCV-want) > 1e-9 {
		t.Errorf("gap CV %.4f, want %.4f", s.GapCV, want)
	}
	// A hash seen before but not after the same blocks is no prefix hit.
	s = readTrace(t, `{"timestamp": 0, "input_length": 20, "output_length": 1, "hash_ids": [1, 2]}
{"timestamp": 1, "input_length": 20, "output_length": 1, "hash_ids": [3, 2]}`).Stats(10)
	if s.Seen != 1 || s.Prefix != 0 {
		t.Errorf("seen %d, prefix %d: want 1 and 0", s.Seen, s.Prefix)
	}
}

// Requests that share a hash id share that block's text exactly, and every
// prompt is input_length tokens: words without a tokenizer, exactly by the
// tokenizer with one, even one whose tokens merge across the joins.
func TestTracePrompts(t *testing.T) {
	t.Parallel()
	tr, err := LoadTrace("testdata/trace.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		tok   Tokenizer
		block int
	}{{"words", nil, 256}, {"whitespace", &wsTok{}, 256}, {"merge", &mergeTok{}, 256}, {"words/partial", nil, 512}, {"merge/partial", &mergeTok{}, 512}} {
		t.Run(c.name, func(t *testing.T) {
			// At 512 tokens a block request 0's third block is cut to 76.
			w, err := New(Options{Trace: tr, BlockSize: c.block, Seed: 7, Tokenizer: c.tok})
			if err != nil {
				t.Fatal(err)
			}
			count := func(s string) int { return len(strings.Fields(s)) }
			if c.tok != nil {
				count = c.tok.Count
			}
			w.Prepare(0, 5)
			reqs := make([]string, 5)
			for i := range reqs {
				req := w.Request(i)
				reqs[i] = req.Prompt
				if n := count(req.Prompt); n != tr.Requests[i].Input || req.PromptTokens != n || req.MaxTokens != tr.Requests[i].Output {
					t.Errorf("request %d: %d tokens (said %d), max %d; want %d and %d", i, n, req.PromptTokens, req.MaxTokens, tr.Requests[i].Input, tr.Requests[i].Output)
				}
			}
			// Blocks 0 and 1 are shared by requests 0 and 1,
			// block 0 by request 3; request 2 shares nothing.
			two := w.blockText(0) + " " + w.blockText(1)
			for _, i := range []int{0, 1} {
				if !strings.HasPrefix(reqs[i], two+" ") {
					t.Errorf("request %d does not start with blocks 0 and 1", i)
				}
			}
			if !strings.HasPrefix(reqs[3], w.blockText(0)+" ") || strings.HasPrefix(reqs[3], two) {
				t.Error("request 3 shares block 0 only")
			}
			if reqs[0][:len(two)+40] == reqs[1][:len(two)+40] {
				t.Error("requests 0 and 1 share more than blocks 0 and 1")
			}
			if n := count(w.blockText(0)); n != c.block {
				t.Errorf("a block is %d tokens, want %d", n, c.block)
			}
			if strings.HasPrefix(reqs[2], w.blockText(0)[:20]) {
				t.Error("request 2 starts like block 0")
			}
			if w.Info().Source != "trace" || !strings.Contains(w.Describe(), fmt.Sprintf("blocks of %d tokens", c.block)) {
				t.Errorf("info: %s", w.Describe())
			}
		})
	}
}

func TestTraceWorkloadConflicts(t *testing.T) {
	t.Parallel()
	tr := readTrace(t, `{"timestamp": 0, "input_length": 10, "output_length": 1}`)
	if _, err := New(Options{Trace: tr, Dataset: "testdata/prompts.jsonl"}); err == nil {
		t.Error("a trace and a dataset: no error")
	}
	if _, err := os.Stat("testdata/trace.jsonl"); err != nil {
		t.Fatal(err)
	}
}

// Prepare builds a long trace's requests ahead only up to
// MaxPreparedTokens; the rest are built when sent.
func TestTracePreparedBound(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": 1}`+"\n", i, MaxLength)
	}
	w, err := New(Options{Trace: readTrace(t, b.String())})
	if err != nil {
		t.Fatal(err)
	}
	if n := w.tracePrepared(0, 40); n != MaxPreparedTokens/MaxLength {
		t.Errorf("%d of 40 requests of %d tokens prepared, want %d", n, MaxLength, MaxPreparedTokens/MaxLength)
	}
	if n := w.tracePrepared(3, 2); n != 2 {
		t.Errorf("2 requests within the bound: %d prepared", n)
	}
}
