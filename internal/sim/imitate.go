package sim

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/tokperf/tokperf/internal/engine"
)

// imitation is the simulator's copy of one engine of engine.Table(): the
// routes only that engine has, its /metrics names and its habits on the
// OpenAI routes. Each lives in a file of its own (sglang.go, vllm.go, …)
// that registers it with imitate; a profile's engine is any engine of the
// table that has one. The wire knowledge stays the simulator's own, not
// read from the table, so that the tests hold the client's table to it.
type imitation struct {
	// serve mounts its generation routes. Every simulator serves every
	// engine's, whichever engine it passes for, so any route can be tested
	// against any profile.
	serve func(s *Server, m *http.ServeMux)
	// own mounts the routes only a server of this engine has: the
	// identity routes detection probes, tokenize routes, health checks.
	own func(s *Server, m *http.ServeMux)
	// metrics writes its Prometheus metrics in its own names; nil where it
	// has no /metrics (a 404, as Ollama's).
	metrics func(s *Server, x *exposition)
	// nullLogprobs: its OpenAI chunks always carry "logprobs": null.
	nullLogprobs bool
	// cachePrompt: its OpenAI routes honour llama.cpp's cache_prompt.
	cachePrompt bool
	// modelMeta: its /v1/models states each model's parameters and
	// weights' bytes (llama-server's meta.n_params and meta.size), from
	// the profile's stated hardware.
	modelMeta bool
	// tgiOpenAI: its OpenAI routes speak TGI's (router/src/lib.rs, and the
	// captures in testdata/wire): empty ids, "usage": null on every chunk,
	// and completions whose finish_reason is "" until the last chunk, which
	// carries the usage unasked.
	tgiOpenAI bool
	// fingerprint is its OpenAI chunks' system_fingerprint; nil for none.
	fingerprint func(s *Server) string
	// roleEvery: no role-only first chat chunk, the role on every delta
	// instead (TGI, Ollama).
	roleEvery bool
	// usageNullAsked: asked for usage, every chunk before the usage chunk
	// says "usage": null (OpenAI's API reference for stream_options).
	usageNullAsked bool
	// timings: its OpenAI streams end with llama.cpp's timings, and its
	// usage says how many prompt tokens were cached.
	timings bool
	// stopReason: its completion chunks carry "stop_reason": null,
	// "system_fingerprint": null and "usage": null, as vLLM's do.
	stopReason bool
}

// imitations are the engines the simulator can be, by engine name.
var imitations = map[string]imitation{}

// imitate registers the simulator's imitation of an engine of the table.
func imitate(name string, im imitation) { imitations[name] = im }

// Engines lists the engines a profile may name: those of engine.Table()
// the simulator imitates, in the table's order.
func Engines() []string {
	var out []string
	for _, e := range engine.Table() {
		if _, ok := imitations[e.Name]; ok {
			out = append(out, e.Name)
		}
	}
	return out
}

// Imitates reports whether a profile may name the engine.
func Imitates(name string) bool {
	_, known := engine.Lookup(name)
	_, ok := imitations[name]
	return known && ok
}

// exposition is a /metrics answer being written: Prometheus text, and the
// figures several engines report under their own names.
type exposition struct {
	b strings.Builder
	// kv is the KV pool's usage (of what is left of a leaking pool),
	// hitRate the prefix cache's hits over its queries.
	kv, hitRate float64
}

// metric writes one sample with its HELP and TYPE lines.
func (x *exposition) metric(name, typ, help string, v float64) {
	fmt.Fprintf(&x.b, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", name, help, name, typ, name, strconv.FormatFloat(v, 'g', -1, 64))
}
