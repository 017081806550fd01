package sim

import (
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
)

// The options added to profiles are off by default and checked with the
// file, line and field named.
func TestProfileOptionErrors(t *testing.T) {
	t.Parallel()
	const base = "name: t\ndecode:\n  linear: {a_ms: 1, c_ms: 0}\nprefill:\n  per_token_us: 1\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"events-per-write-negative", "wire:\n  events_per_write: -1\n", "t.yaml:7: wire.events_per_write: must be 0..1000, got -1"},
		{"events-per-write-huge", "wire:\n  events_per_write: 5000\n", "t.yaml:7: wire.events_per_write: must be 0..1000"},
		{"tool-calls-not-bool", "wire:\n  tool_calls: maybe\n", "t.yaml:7"},
		{"prefix-block-without-cache", "prefix_cache_block: 8\n", "t.yaml:6: prefix_cache_block: needs prefix_cache: true"},
		{"prefix-tokens-without-cache", "prefix_cache_tokens: 800\n", "t.yaml:6: prefix_cache_tokens: needs prefix_cache: true"},
		{"prefix-block-huge", "prefix_cache: true\nprefix_cache_block: 5000\n", "t.yaml:7: prefix_cache_block: must be 1..4096 tokens, got 5000"},
		{"prefix-budget-under-a-block", "prefix_cache: true\nprefix_cache_tokens: 4\n", "t.yaml:7: prefix_cache_tokens: must be between a block (16) and kv_tokens"},
		{"acceptance-repetitive", "speculative: {drafts: 2, acceptance: 0.5, acceptance_repetitive: 1.5}\n", "t.yaml:6: speculative.acceptance_repetitive: must be in [0, 1), got 1.5"},
		{"reasoning-none", "reasoning: {tokens: 0}\n", "t.yaml:6: reasoning.tokens: must be 1..1048576, got 0"},
		{"reasoning-field", "reasoning: {tokens: 5, field: thoughts}\n", `t.yaml:6: reasoning.field: must be reasoning_content or reasoning, got "thoughts"`},
		{"prefix-budget-over-the-pool", "kv_tokens: 1000\nprefix_cache: true\nprefix_cache_tokens: 2000\n", "t.yaml:8: prefix_cache_tokens: must be between a block (16) and kv_tokens (1000), got 2000"},
		{"fault-on-unknown-route", "faults:\n  /v1/complete:\n    http_500: 1\n", "t.yaml:8: faults./v1/complete: is not a generation route of the simulator"},
		{"hardware-without-params", "hardware: {gpu: H100, precision: bf16}\n", "t.yaml:6: hardware.params_b: must be the model's parameters in billions, got 0"},
		{"hardware-without-precision", "hardware: {gpu: H100, params_b: 70}\n", "t.yaml:6: hardware.precision: is required with params_b"},
		{"hardware-active-over-all", "hardware: {params_b: 17, active_params_b: 70, precision: fp8}\n", "t.yaml:6: hardware.active_params_b: must be between 0 (all) and params_b (17), got 70"},
		{"fault-on-models-route", "faults:\n  /v1/models:\n    http_500: 1\n", "faults./v1/models: is not a generation route"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseProfile("t.yaml", []byte(base+tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	p, err := ParseProfile("t.yaml", []byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Wire; !reflect.DeepEqual(w, Wire{}) || p.PrefixCache {
		t.Errorf("a profile without options has wire %+v, prefix cache %v; want all off", w, p.PrefixCache)
	}
	p, err = ParseProfile("t.yaml", []byte(base+"prefix_cache: true\n"))
	if err != nil || p.PrefixCacheBlock != 16 || p.PrefixCacheTokens != p.KVTokens {
		t.Errorf("prefix cache defaults: block %d, budget %d (%v); want 16 and kv_tokens", p.PrefixCacheBlock, p.PrefixCacheTokens, err)
	}
}

// README.md documents every wire option and the prefix cache's, and its
// example profile parses.
func TestReadmeListsTheOptions(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(readme)
	tags := []string{"prefix_cache", "prefix_cache_block", "prefix_cache_tokens", "reasoning"}
	for _, typ := range []reflect.Type{reflect.TypeFor[Wire](), reflect.TypeFor[Degrade](), reflect.TypeFor[Hardware]()} {
		for i := range typ.NumField() {
			tags = append(tags, typ.Field(i).Tag.Get("yaml"))
		}
	}
	for _, tag := range tags {
		if tag == "ignore_ignore_eos" || tag == "wrong_answers" {
			continue // faults, documented in profile.go
		}
		if !strings.Contains(doc, "`"+tag+":") {
			t.Errorf("README.md does not document %s", tag)
		}
	}
	_, rest, ok := strings.Cut(doc, "```yaml\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no yaml example")
	}
	if _, err := ParseProfile("README.md", []byte(example)); err != nil {
		t.Errorf("README.md's example: %v", err)
	}
}

// Faults strike only the generation routes: with every fault certain on
// "*", an unknown route still 404s and the identity routes still answer,
// while a generation route gets the fault.
func TestFaultsLeaveOtherRoutesAlone(t *testing.T) {
	t.Parallel()
	p := mustProfile(t, "tiny")
	p.Faults = map[string]Fault{"*": {HTTP500: 1}}
	serveVirtual(t, p, func(c *http.Client, s *Server) {
		for _, tc := range []struct {
			method, path, body string
			want               int
		}{
			{"POST", "/v1/complete", `{"prompt":"x","max_tokens":2,"stream":true}`, 404},
			{"POST", "/nowhere", `{}`, 404},
			{"GET", "/v1/models", "", 200},
			{"GET", "/health", "", 200},
			{"POST", "/v1/completions", `{"prompt":"x","max_tokens":2,"stream":true}`, 500},
		} {
			if code, _, body := do(t, c, tc.method, tc.path, tc.body); code != tc.want {
				t.Errorf("%s %s: HTTP %d (%.80s), want %d", tc.method, tc.path, code, body, tc.want)
			}
		}
	})
}
