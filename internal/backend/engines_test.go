package backend

import (
	"testing"

	"github.com/tokperf/tokperf/internal/engine"
)

// The engine table and the protocols agree: every engine the table says
// has a native endpoint has a protocol registered under its name, and no
// protocol is registered for an engine the table does not know.
func TestEngineTableMatchesProtocols(t *testing.T) {
	for _, e := range engine.Table() {
		_, registered := natives[e.Name]
		if e.Native != registered {
			t.Errorf("%s: the table says native %v, a protocol is registered: %v", e.Name, e.Native, registered)
		}
		if _, err := New(Config{URL: "http://127.0.0.1:1", Endpoint: engine.DefaultEndpoint(e.Name), Engine: e.Name}); err != nil {
			t.Errorf("%s: its default endpoint %s: %v", e.Name, engine.DefaultEndpoint(e.Name), err)
		}
	}
	for name := range natives {
		if _, ok := engine.Lookup(name); !ok {
			t.Errorf("a protocol is registered for %q, which the engine table does not know", name)
		}
	}
}
