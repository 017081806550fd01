package sim_test

import (
	"fmt"

	"github.com/tokperf/tokperf/internal/sim"
)

// A profile that imitates llama-server's habits, as in README.md.
func ExampleParseProfile() {
	p, err := sim.ParseProfile("llama-server-like.yaml", []byte(`name: llama-server-like
engine: llamacpp
decode:
  linear: {a_ms: 8, c_ms: 0.5}
prefill:
  per_token_us: 40
prefix_cache: true
wire:
  close_after_stream: true
  metrics_at_end: true
  events_per_write: 3
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Engine, p.PrefixCacheBlock, p.Wire.CloseAfterStream, p.Wire.MetricsAtEnd, p.Wire.EventsPerWrite)
	_, err = sim.ParseProfile("bad.yaml", []byte("name: x\ndecode:\n  linear: {a_ms: 1}\nprefill:\n  per_token_us: 1\nwire:\n  events_per_write: -2\n"))
	fmt.Println(err)
	// Output:
	// llamacpp 16 true true 3
	// bad.yaml:7: wire.events_per_write: must be 0..1000, got -2
}
