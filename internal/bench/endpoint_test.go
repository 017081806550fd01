package bench

import (
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/sim"
)

// An engine's own endpoint (Ollama's api-chat) asked of a server of
// another engine is warned of, naming the engine it belongs to; of its
// own engine it is not. Triton's session takes its native route.
func TestEndpointOfAnotherEngine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		engine, endpoint string
		warn             bool
		want             string // the session's endpoint
	}{
		{"vllm", "api-chat", true, "api-chat"},
		{"ollama", "api-chat", false, "api-chat"},
		{"vllm", "chat", false, "chat"},
		{"triton", "", false, "generate"},
	} {
		p, err := sim.LoadProfile("tiny")
		if err != nil {
			t.Fatal(err)
		}
		p.Engine = tc.engine
		_, url, stop, err := sim.Start(t.Context(), p, "127.0.0.1:0", sim.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		s, err := Connect(t.Context(), "run", Target{URL: url, Endpoint: tc.endpoint}, &Env{Progress: &out})
		if err != nil {
			stop()
			t.Fatal(err)
		}
		warned := strings.Contains(out.String(), "is ollama's own route, and this server is "+tc.engine)
		if warned != tc.warn || s.Setup.Endpoint != tc.want || s.Setup.Server.Engine != tc.engine {
			t.Errorf("%s on %s: endpoint %s, warned %v, want %v:\n%s", tc.endpoint, s.Setup.Server.Engine, s.Setup.Endpoint, warned, tc.warn, out.String())
		}
		s.Close()
		stop()
	}
}
