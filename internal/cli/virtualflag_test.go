package cli

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/summary"
)

// --virtual serves each stage on the simulator's engine in virtual time,
// with no network and no client: its figures must be the ones the same
// simulator gives when served over a network to the real client (here in
// a synctest bubble, where neither the machine's load nor the client's CPU
// costs time). Each case differs in what the engine decides: EOS, the
// chat route's costs, speculative decoding, the prefix cache's shared
// prompts.
func TestVirtualFlagMatchesTheServedSimulator(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"tiny", []string{"--sim-profile", "tiny", "-c", "1,4,16", "--output-tokens", "40"}},
		{"eos", []string{"--sim-profile", "llama-3.1-8b-1xh100", "-c", "2,8", "--ignore-eos=false", "--output-tokens", "64", "--seed", "3"}},
		{"chat", []string{"--sim-profile", "tiny", "-c", "1,8", "--endpoint", "chat", "--output-tokens", "30"}},
		{"mtp", []string{"--sim-profile", "seed-mtp", "-c", "4,32", "--output-tokens", "48", "--requests", "64"}},
		{"shared prefix", []string{"--sim-profile", "tiny", "-c", "4", "--shared-prefix", "64", "--input-tokens", "96", "--output-tokens", "20"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := append([]string{"sweep", "--format", "json", "--seed", "11"}, tc.args...)
			served, errw, code := runVirtual(t, append(args, "-o", filepath.Join(dir, "served.jsonl"))...)
			if code != 0 {
				t.Fatalf("served: exit %d: %s", code, errw)
			}
			virtual, errw, code := runCLI(t, append(args, "--virtual", "-o", filepath.Join(dir, "virtual.jsonl"))...)
			if code != 0 {
				t.Fatalf("--virtual: exit %d: %s", code, errw)
			}
			a, b := stagesOf(t, served), stagesOf(t, virtual)
			if len(a) != len(b) || len(a) == 0 {
				t.Fatalf("%d served stages, %d virtual", len(a), len(b))
			}
			for i := range a {
				x, y := a[i], b[i]
				if x.OK != y.OK || x.OutputTokens != y.OutputTokens || x.PromptTokens != y.PromptTokens {
					t.Errorf("C=%d: served %d ok, %d out, %d prompt tokens; virtual %d, %d, %d", x.Concurrency, x.OK, x.OutputTokens, x.PromptTokens, y.OK, y.OutputTokens, y.PromptTokens)
				}
				for _, f := range []struct {
					name string
					x, y float64
				}{{"aggregate tok/s", x.AggregateTokS, y.AggregateTokS}, {"TTFT p50", x.TTFT.P50, y.TTFT.P50}, {"decode p50", x.DecodeTokS.P50, y.DecodeTokS.P50}, {"E2E p99", x.E2E.P99, y.E2E.P99}} {
					if d := math.Abs(f.y/f.x - 1); !(d <= 0.01) {
						t.Errorf("C=%d %s: served %.4g, virtual %.4g (%+.2f%%)", x.Concurrency, f.name, f.x, f.y, 100*(f.y/f.x-1))
					}
				}
			}
			if !strings.Contains(virtual, `"virtual": true`) {
				t.Errorf("the JSON's setup does not say the run was virtual")
			}
		})
	}
}

// The same --virtual run twice gives the same figures to the last digit:
// nothing in it depends on the machine's clock.
func TestVirtualFlagIsDeterministic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var outs [2][]summary.Stage
	for i := range outs {
		out, errw, code := runCLI(t, "sweep", "--virtual", "--sim-profile", "seed", "-c", "1,32", "--requests", "64", "--seed", "5", "--format", "json", "-o", filepath.Join(dir, "r"+string(rune('a'+i))+".jsonl"))
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errw)
		}
		outs[i] = stagesOf(t, out)
	}
	for i := range outs[0] {
		x, y := outs[0][i], outs[1][i]
		if x.AggregateTokS != y.AggregateTokS || x.TTFT.P99 != y.TTFT.P99 || x.WallS != y.WallS {
			t.Errorf("C=%d: %v tok/s, TTFT p99 %v, wall %v; then %v, %v, %v", x.Concurrency, x.AggregateTokS, x.TTFT.P99, x.WallS, y.AggregateTokS, y.TTFT.P99, y.WallS)
		}
	}
}

func TestVirtualFlagRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"a url", []string{"--url", "http://127.0.0.1:1"}, "give no --url"},
		{"a rate", []string{"--rate", "2"}, "not open-loop rates"},
		{"slices", []string{"--slice", "10s", "--duration", "70s"}, "not sliced soaks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, errw, code := runCLI(t, append([]string{"run", "--virtual", "-o", filepath.Join(t.TempDir(), "r.jsonl")}, tc.args...)...)
			if code != 2 || !strings.Contains(errw, tc.want) {
				t.Errorf("exit %d, stderr %q: want 2 and %q", code, errw, tc.want)
			}
		})
	}
}

func stagesOf(t *testing.T, out string) []summary.Stage {
	t.Helper()
	var doc struct {
		Setup  record.Setup
		Stages []summary.Stage
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v:\n%.400s", err, out)
	}
	return doc.Stages
}
