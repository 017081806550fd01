package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/tokperf/tokperf/internal/memnet"
)

func TestRepetition(t *testing.T) {
	t.Parallel()
	loop := strings.Repeat("a b c d ", 50)
	prose := "The quick brown fox jumps over the lazy dog while a small bird sings in the old oak tree near the river bank"
	if r := Repetition(loop); r < 0.95 {
		t.Errorf("a loop: repetition %.2f, want near 1", r)
	}
	if r := Repetition(prose); r != 0 {
		t.Errorf("varied prose: repetition %.2f, want 0", r)
	}
	if r := Repetition("one two"); r != 0 {
		t.Errorf("two words: %.2f", r)
	}
	s := &Spec{Acceptance: 0.3, AcceptanceRepetitive: 0.9}
	if a := s.AcceptanceFor(0.5); math.Abs(a-0.6) > 1e-9 {
		t.Errorf("half repetitive: acceptance %.2f, want 0.6", a)
	}
}

// With acceptance_repetitive a prompt that repeats itself is accepted
// more: its chunks carry more tokens, as τ(α) says, than varied text's.
func TestSpeculationDependsOnTheText(t *testing.T) {
	t.Parallel()
	p, err := ParseProfile("s.yaml", []byte(`name: s
engine: vllm
model: s
decode: {linear: {a_ms: 2, c_ms: 0}}
prefill: {per_token_us: 1}
speculative: {drafts: 3, acceptance: 0.3, acceptance_repetitive: 0.9}
seed: 3
`))
	if err != nil {
		t.Fatal(err)
	}
	var words []string
	for i := range 400 {
		words = append(words, vocab()[(i*7919)%len(vocab())])
	}
	varied := strings.Join(words, " ")
	loop := strings.Repeat("the cat sat on the mat ", 60)
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		ctx, stop := context.WithCancel(context.Background())
		srv := New(p, Options{NoTrace: true})
		done := make(chan struct{})
		go func() { defer close(done); srv.Serve(ctx, n) }()
		c := &http.Client{Transport: &http.Transport{DialContext: n.Dial}}
		perChunk := func(prompt string) float64 {
			body, _ := json.Marshal(map[string]any{"model": "s", "prompt": prompt, "max_tokens": 3000, "ignore_eos": true, "stream": true})
			resp, err := c.Post("http://"+n.Addr().String()+"/v1/completions", "application/json", strings.NewReader(string(body)))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			chunks := 0
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				if l := sc.Text(); strings.HasPrefix(l, "data: {") {
					chunks++
				}
			}
			return 3000 / float64(chunks)
		}
		v, l := perChunk(varied), perChunk(loop)
		tau := func(a float64) float64 { return (1 - math.Pow(a, 4)) / (1 - a) }
		wantV, wantL := tau(p.Spec.AcceptanceFor(Repetition(varied))), tau(p.Spec.AcceptanceFor(Repetition(loop)))
		t.Logf("tokens per chunk: varied %.2f (τ %.2f), repetitive %.2f (τ %.2f)", v, wantV, l, wantL)
		if math.Abs(v/wantV-1) > 0.05 || math.Abs(l/wantL-1) > 0.05 || l < v+1 {
			t.Errorf("tokens per chunk %.2f varied, %.2f repetitive; τ says %.2f and %.2f", v, l, wantV, wantL)
		}
		stop()
		<-done
	})
}
