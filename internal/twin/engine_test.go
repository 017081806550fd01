package twin

import (
	"testing"

	"github.com/tokperf/tokperf/internal/engine"
	"github.com/tokperf/tokperf/internal/record"
	"github.com/tokperf/tokperf/internal/sim"
)

// A twin's profile imitates the run's engine, whichever engine of the
// table it was, so that its wire format and /metrics names are the
// server's; a run against an engine the simulator cannot be gets vLLM's.
func TestProfileKeepsTheEngine(t *testing.T) {
	t.Parallel()
	for _, name := range append(engine.Names(), "mystery") {
		in := Input{Setup: record.Setup{Model: "m", Server: record.Server{Engine: name}}}
		p, _, _ := baseProfile(in, []level{{c: 1}})
		want := name
		if _, known := engine.Lookup(name); !known {
			want = "vllm"
		}
		if p.Engine != want {
			t.Errorf("a run against %s: the twin's profile imitates %s, want %s", name, p.Engine, want)
		}
		if _, err := sim.ParseProfile("twin.yaml", []byte("name: t\nengine: "+p.Engine+"\ndecode: {linear: {a_ms: 4}}\nprefill: {per_token_us: 10}\n")); err != nil {
			t.Errorf("a run against %s: the simulator refuses the twin's engine: %v", name, err)
		}
	}
}
