package baseline

import (
	"strings"
	"testing"
)

func TestBuiltin(t *testing.T) {
	t.Parallel()
	all := Builtin()
	seed := Find(all, "seed-qwen3.5-397b-8x-rtxpro6000")
	if seed == nil || seed.GPUs != 8 || len(seed.Points) != 4 || seed.Point(32).AggregateTokS != 2156.4 {
		t.Fatalf("seed baseline: %+v", seed)
	}
	if c := Find(all, "catid-qwen3.5-4gpu"); c == nil || c.Point(32).AggregateTokS != 1373 || c.GPUs != 4 {
		t.Errorf("catid baseline: %+v", c)
	}
	if Find(all, "nope") != nil || seed.Point(7) != nil {
		t.Error("found what is not there")
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown field", "- name: a\n  colour: red\n  points: [{concurrency: 1, aggregate_tok_s: 1}]\n", "f.yaml:2:"},
		{"no name", "- gpus: 1\n  points: [{concurrency: 1, aggregate_tok_s: 1}]\n", "f.yaml:1: [0].name: is required"},
		{"twice", "- name: a\n  points: [{concurrency: 1, aggregate_tok_s: 1}]\n- name: a\n  points: [{concurrency: 1, aggregate_tok_s: 1}]\n", `f.yaml:3: [1].name: "a" appears twice`},
		{"no points", "- name: a\n", "[0].points: needs at least one point"},
		{"bad throughput", "- name: a\n  points:\n    - {concurrency: 2, aggregate_tok_s: -3}\n", "f.yaml:3: [0].points[0].aggregate_tok_s: must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	if Normalize("RTX PRO 6000 Blackwell (as quoted)") != Normalize("rtx  pro 6000 blackwell") {
		t.Error("normalization differs")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(builtin)
	f.Add([]byte("- name: a\n  points: [{concurrency: 1, aggregate_tok_s: 1}]\n"))
	// Near the inputs that crashed or exhausted the YAML library: a tag
	// one deletion away from having no value, aliases, deep nesting.
	f.Add([]byte("- name: a\n  points: !t x\n"))
	f.Add([]byte("- name: !t a\n  points:\n    - concurrency: !t 1\n"))
	f.Add([]byte("- &a {name: a, points: [{concurrency: 1, aggregate_tok_s: 1}]}\n- *a\n"))
	f.Add([]byte("- name: a\n  points: [[[[[[[[{concurrency: 1}]]]]]]]]\n"))
	f.Add([]byte("- name: a\n  points: [{concurrency: 1, aggregate_tok_s: .inf}]\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		bs, err := Parse("fuzz.yaml", in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		for _, b := range bs {
			if b.Name == "" || len(b.Points) == 0 {
				t.Fatalf("accepted an invalid baseline %+v", b)
			}
		}
	})
}
