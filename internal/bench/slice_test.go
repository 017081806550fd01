package bench

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tokperf/tokperf/internal/analyze"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/stability"
	"github.com/tokperf/tokperf/internal/workload"
)

// soakProfile writes a simulator profile of flat 50 ms steps, a little
// jitter, and degrade (YAML, indented under degrade:) to dir.
func soakProfile(t *testing.T, dir string, seed int, degrade string) string {
	t.Helper()
	yaml := "name: soak\nengine: vllm\ndecode:\n  linear: {a_ms: 500, c_ms: 5}\nprefill:\n  per_token_us: 20\nstream_interval: 2\njitter: 0.05\nseed: " + itoa(seed) + "\n"
	if degrade != "" {
		yaml += "degrade:\n" + degrade
	}
	path := filepath.Join(dir, "soak.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func itoa(n int) string { return strconv.Itoa(n) }

// soak runs one closed-loop level against profile for d in slices of a
// minute, in virtual time.
func soak(t *testing.T, profile string, d time.Duration, seed int64, env func(*Env)) *analyze.Run {
	return soakAt(t, 4, profile, d, seed, env)
}

// soakAt is soak at concurrency c.
func soakAt(t *testing.T, c int, profile string, d time.Duration, seed int64, env func(*Env)) *analyze.Run {
	t.Helper()
	dir := t.TempDir()
	var run *analyze.Run
	virtual(t, func(e *Env) {
		if env != nil {
			env(e)
		}
		var err error
		cfg := SweepConfig{Command: "soak", Target: Target{SimProfile: profile},
			Load:     Load{Concurrency: []int{c}, Duration: d, Warmup: c, Slice: time.Minute, Seed: seed},
			Workload: workload.Synthetic{InputTokens: 16, OutputTokens: 10, IgnoreEOS: true, Seed: seed}, Out: filepath.Join(dir, "soak.jsonl")}
		if run, err = Sweep(context.Background(), cfg, e); err != nil {
			t.Fatal(err)
		}
	})
	return run
}

func figure(t *testing.T, v *stability.Verdict, field string) stability.Figure {
	t.Helper()
	for _, f := range v.Figures {
		if f.Field == field {
			return f
		}
	}
	t.Fatalf("no %s in %s", field, v.Text)
	return stability.Figure{}
}

// Step time growing 10 %/h and resident memory 1 GB/h over two simulated
// hours: degrading, TPOT's slope within 2 %/h of the truth, the leak
// within 20%.
func TestSoakFindsDrift(t *testing.T) {
	t.Parallel()
	run := soak(t, soakProfile(t, t.TempDir(), 1, "  step_growth_pct_per_h: 10\n  resident_gb: 4\n  resident_gb_per_h: 1\n"), 2*time.Hour, 1, nil)
	v := run.Stages[0].Stability
	t.Log(v.Text)
	if v.Kind != "degrading" {
		t.Fatalf("verdict %s", v.Text)
	}
	// TPOT grows by 10% of the profile's step an hour: in % of its level
	// at the first measured slice's middle it is 10 / (1 + 0.1·h₀).
	h0 := (time.Duration(v.Warmup)*time.Minute + 30*time.Second).Hours()
	want := 10 / (1 + 0.1*h0)
	if f := figure(t, v, "tpot_p50_ms"); f.State != "drift" || !f.Worse || math.Abs(f.PctPerH-want) > 2 {
		t.Errorf("TPOT %+.2f %%/h [%+.2f, %+.2f] (%s), want %+.2f ± 2", f.PctPerH, f.PctPerHLo, f.PctPerHHi, f.State, want)
	}
	if f := figure(t, v, "aggregate_tok_s"); f.State != "drift" || !f.Worse || f.PctPerH > -5 {
		t.Errorf("aggregate %+.2f %%/h (%s), want a fall near −9 %%/h", f.PctPerH, f.State)
	}
	if f := figure(t, v, "resident_bytes"); f.State != "growth" || math.Abs(f.PerH-1e9) > 0.2e9 {
		t.Errorf("server memory %+.3g bytes/h (%s), want 1e9 ± 20%%", f.PerH, f.State)
	}
}

// A slowdown by 1.4× at minute 35 is a change point located within a
// slice, with the levels before and after.
func TestSoakFindsChangePoint(t *testing.T) {
	t.Parallel()
	run := soak(t, soakProfile(t, t.TempDir(), 2, "  slowdown_at_s: 2100\n  slowdown_factor: 1.4\n"), 70*time.Minute, 2, nil)
	v := run.Stages[0].Stability
	t.Log(v.Text)
	f := figure(t, v, "tpot_p50_ms")
	if v.Kind != "degrading" || f.State != "shift" || len(f.Changes) == 0 {
		t.Fatalf("verdict %s", v.Text)
	}
	// Slice k starts at minute k (the stage starts with the server here).
	c := f.Changes[0]
	if c.Slice < 34 || c.Slice > 36 || math.Abs(c.Pct-40) > 5 {
		t.Errorf("TPOT change %+v, want at slice 35 ± 1, +40%%", c)
	}
	if !strings.Contains(v.Text, "TPOT +4") || !strings.Contains(v.Text, "(change point, ") {
		t.Errorf("text %q", v.Text)
	}
}

// A pause of half a second every 30 s (a GC) is noise each slice shares:
// stable. A KV pool leaking 4 tokens a minute from room for four
// requests to room for one makes requests queue: degrading, by TTFT.
func TestSoakStallsAndLeaks(t *testing.T) {
	t.Parallel()
	run := soak(t, soakProfile(t, t.TempDir(), 4, "  stall_every_s: 30\n  stall_s: 0.5\n"), 20*time.Minute, 4, nil)
	if v := run.Stages[0].Stability; v.Kind != "stable" {
		t.Errorf("periodic stalls: %s", v.Text)
	}
	// A request holds 16 + 10 = 26 tokens: 104 fit four at a time, under
	// 52 one at a time (after about 13 minutes).
	dir := t.TempDir()
	path := soakProfile(t, dir, 5, "  kv_leak_tokens_per_min: 4\n")
	b, _ := os.ReadFile(path)
	os.WriteFile(path, append(b, "kv_tokens: 104\n"...), 0o644)
	v := soak(t, path, 20*time.Minute, 5, nil).Stages[0].Stability
	t.Log(v.Text)
	if f := figure(t, v, "ttft_p99_ms"); v.Kind != "degrading" || f.State == "flat" || !f.Worse {
		t.Errorf("a leaking KV pool: %s", v.Text)
	}
}

// Steady seeded runs (9 minutes at C=2: 7 measured slices of about 20
// requests) are called stable at least 19 times in 20.
func TestSoakSteadyIsStable(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("20 runs of 10 simulated minutes")
	}
	stable := 0
	for seed := 10; seed < 30; seed++ {
		run := soakAt(t, 2, soakProfile(t, t.TempDir(), seed, ""), 9*time.Minute, int64(seed), nil)
		if v := run.Stages[0].Stability; v.Kind == "stable" {
			stable++
		} else {
			t.Logf("seed %d: %s", seed, v.Text)
		}
	}
	t.Logf("%d of 20 steady runs stable", stable)
	if stable < 19 {
		t.Errorf("%d of 20 steady runs called stable, want 19 or more", stable)
	}
}

// The client's heap stays flat however long a sliced run goes: the live
// heap (after a collection) at hour 1 and at the last hour differ by less
// than 2 MB. Two simulated hours by default; TOKPERF_SOAK_HOURS=24 for a
// day (about a minute of real time).
//
// Serial: it reads the process's heap.
func TestSoakMemoryIsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("hours of simulated soak")
	}
	hours := 2
	if h, err := strconv.Atoi(os.Getenv("TOKPERF_SOAK_HOURS")); err == nil && h > 1 {
		hours = h
	}
	var at1, atN uint64
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	profile := "name: slow\nengine: vllm\ndecode:\n  linear: {a_ms: 1000, c_ms: 0}\nprefill:\n  per_token_us: 20\nstream_interval: 2\nseed: 1\ndegrade:\n  resident_gb: 4\n"
	path := filepath.Join(t.TempDir(), "slow.yaml")
	if err := os.WriteFile(path, []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	run := soak(t, path, time.Duration(hours)*time.Hour, 1, func(e *Env) {
		e.SliceDone = func(s record.Slice) {
			switch s.Index {
			case 60:
				at1 = heap()
			case 60*hours - 1:
				atN = heap()
			}
		}
	})
	st := run.Stages[0]
	t.Logf("%d h in %v: %d requests, %d slices; heap %.2f MB at hour 1, %.2f MB at hour %d", hours, time.Since(start).Round(time.Millisecond), st.Requests, len(st.Slices), float64(at1)/1e6, float64(atN)/1e6, hours)
	if at1 == 0 || atN == 0 {
		t.Fatal("no heap readings")
	}
	if grow := float64(atN) - float64(at1); grow > 2e6 {
		t.Errorf("heap grew %.2f MB from hour 1 to hour %d", grow/1e6, hours)
	}
}
