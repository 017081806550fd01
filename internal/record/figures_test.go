package record

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The per-request figures, each against the definition docs/METRICS.md §2
// gives it: the test reads the definition from the document and computes
// the expected value from the record's timestamps by that definition.
func TestFiguresAgainstMetrics(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "METRICS.md"))
	if err != nil {
		t.Fatal(err)
	}
	definition := func(name string) string {
		for _, line := range strings.Split(string(doc), "\n") {
			if strings.HasPrefix(line, "| "+name+" |") {
				return line
			}
		}
		t.Fatalf("docs/METRICS.md has no row for %q", name)
		return ""
	}
	ms := time.Millisecond
	// Sent at 10 ms after being scheduled at 8; the first chunk (2 tokens)
	// at 60, the last at 160; 12 output tokens; first content at 80.
	r := New(1)
	r.Scheduled, r.Sent, r.FirstContent, r.OutputTokens = 8*ms, 10*ms, 80*ms, 12
	r.AddChunk(60*ms, 2)
	r.AddChunk(110*ms, 5)
	r.AddChunk(160*ms, 5)
	figure := func(v float64, ok bool) float64 {
		if !ok {
			return math.NaN()
		}
		return v
	}
	dur := func(d time.Duration, ok bool) float64 { return figure(Ms(d), ok) }
	ttft, _ := r.TTFT()
	for _, tc := range []struct {
		name, says string // the METRICS.md row and what its definition must say
		got, want  float64
	}{
		{"client queue", "`sent − scheduled`", Ms(r.ClientQueue()), 2},
		{"TTFT", "`first_token − sent`", dur(r.TTFT()), 50},
		{"TTFO", "`first_content − sent`", dur(r.TTFO()), 70},
		{"E2E latency", "`last_token − sent`", dur(r.E2E()), 150},
		{"decode time", "`last_token − first_token`", func() float64 { d, _, ok := r.Decode(); return dur(d, ok) }(), 100},
		{"decode tokens", "`output_tokens − tokens in the first token chunk`", func() float64 { _, n, ok := r.Decode(); return figure(float64(n), ok) }(), 10},
		{"TPOT", "`decode time / decode tokens`", figure(r.TPOT()), 10},
		{"decode tok/s", "`decode tokens / decode time`", figure(r.DecodeTokS()), 100},
		{"request tok/s", "`output_tokens / E2E latency`", figure(r.RequestTokS()), 80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if row := definition(tc.name); !strings.Contains(row, tc.says) {
				t.Errorf("docs/METRICS.md defines %s as %q, the code computes %s", tc.name, row, tc.says)
			}
			if math.Abs(tc.got-tc.want) > 1e-9 {
				t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
			}
		})
	}
	if ttft != 50*ms {
		t.Errorf("TTFT %v", ttft)
	}
}

// A figure of a zero or negative span is undefined, never a division by
// zero: the whole stream in one read, or no token at all.
func TestFiguresUndefined(t *testing.T) {
	t.Parallel()
	oneRead := New(1)
	oneRead.Sent, oneRead.OutputTokens = 0, 50
	oneRead.AddChunk(time.Second, 1)
	oneRead.AddChunk(time.Second, 49) // the rest arrived with it
	if _, _, ok := oneRead.Decode(); ok {
		t.Error("decode defined over a zero span")
	}
	if _, ok := oneRead.DecodeTokS(); ok {
		t.Error("decode tok/s defined over a zero span")
	}
	if _, ok := oneRead.TPOT(); ok {
		t.Error("TPOT defined over a zero span")
	}
	if v, ok := oneRead.RequestTokS(); !ok || v != 50 {
		t.Errorf("request tok/s %v (%v), want 50: E2E is 1 s", v, ok)
	}
	none := New(2)
	for name, ok := range map[string]bool{
		"TTFT": second(none.TTFT()), "TTFO": second(none.TTFO()), "E2E": second(none.E2E()), "TPOT": second(none.TPOT()),
		"request tok/s": second(none.RequestTokS()),
	} {
		if ok {
			t.Errorf("%s defined for a request with no token", name)
		}
	}
}

func second[T any](_ T, ok bool) bool { return ok }

// With usage only at the end and several tokens per chunk, the chunks'
// counts are unknown (one each is assumed): the first chunk is taken to
// hold the mean, so decode tokens are not overcounted.
func TestFirstChunkFromUsage(t *testing.T) {
	t.Parallel()
	r := New(1)
	r.Sent, r.OutputTokens, r.ChunkSource = 0, 150, SourceChunks
	for k := range 50 {
		r.AddChunk(time.Duration(10+k)*time.Millisecond, 1)
	}
	if n := r.FirstChunkTokens(); n != 3 {
		t.Errorf("first chunk %d tokens, want 150/50 = 3", n)
	}
	if _, dn, _ := r.Decode(); dn != 147 {
		t.Errorf("decode tokens %d, want 147", dn)
	}
	r.ChunkSource = SourceContinuous // counted per chunk: taken as is
	if n := r.FirstChunkTokens(); n != 1 {
		t.Errorf("first chunk %d tokens, want the counted 1", n)
	}
}
