package cli

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/sim"
)

// compare of the seed deployment without and with MTP (the seed-mtp
// profile: 3 drafts accepted with probability 0.7, 2.53 tokens a verify
// step) explains where the acceptance's speed-up went, from the server's
// counters, at each level: in JSON and in the text.
func TestCompareExplainsSpeculation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, p := range []string{"seed", "seed-mtp"} {
		if out, errw, code := runVirtual(t, "sweep", "--sim-profile", p, "--endpoint", "generate", "-c", "1,16", "--requests", "32", "--input-tokens", "50", "--output-tokens", "200", "-o", dir+"/"+p+".jsonl"); code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", p, code, out, errw)
		}
	}
	out, errw, code := runCLI(t, "compare", dir+"/seed.jsonl", dir+"/seed-mtp.jsonl", "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errw)
	}
	var c analyze.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Speculation) != 1 || len(c.Speculation[0].Levels) != 2 || !strings.HasSuffix(c.Speculation[0].Spec, "seed-mtp.jsonl") {
		t.Fatalf("speculation %+v", c.Speculation)
	}
	p, err := sim.LoadProfile("seed-mtp")
	if err != nil {
		t.Fatal(err)
	}
	want := p.TokensPerStep()
	for _, l := range c.Speculation[0].Levels {
		if l.Source != "server counters" || math.Abs(l.TokensPerStep-want) > 0.1 || math.Abs(l.ChunkTokens-l.TokensPerStep) > 0.05 {
			t.Errorf("%s: %.3f tokens per step from %s (chunks %.3f), truth %.3f", l.Label, l.TokensPerStep, l.Source, l.ChunkTokens, want)
		}
	}
	// The verify step's cost grows with the batch, so the gain shrinks.
	if one, many := c.Speculation[0].Levels[0], c.Speculation[0].Levels[1]; !(many.StepCost > one.StepCost && many.Measured < one.Measured) {
		t.Errorf("C=1 cost %.2f speed-up %.2f, C=16 cost %.2f speed-up %.2f", one.StepCost, one.Measured, many.StepCost, many.Measured)
	}
	text, _, _ := runCLI(t, "compare", dir+"/seed.jsonl", dir+"/seed-mtp.jsonl")
	if !strings.Contains(text, "speculative decoding: "+dir+"/seed-mtp.jsonl against") || !strings.Contains(text, c.Speculation[0].Levels[1].Text) {
		t.Errorf("the text lacks the explanation:\n%s", text)
	}
	page, _, _ := runCLI(t, "compare", dir+"/seed.jsonl", dir+"/seed-mtp.jsonl", "--format", "html")
	if !strings.Contains(page, "<h3>Speculative decoding: ") || !strings.Contains(page, "tokens per verify step (server counters)") {
		t.Error("the page lacks the explanation")
	}
}
