package cli

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/tokperf/tokperf/internal/bench"
	"github.com/tokperf/tokperf/internal/memnet"
)

// runVirtual runs tokperf against the embedded simulator over an in-memory
// network in virtual time.
func runVirtual(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		var out, errw bytes.Buffer
		e := &env{
			stdin: strings.NewReader(""), stdout: &out, stderr: &errw,
			bench: bench.Env{
				Getenv: func(string) string { return "" },
				Listen: func(string) (net.Listener, error) { return n, nil },
				Dial:   n.Dial,
			},
		}
		code = run(context.Background(), args, e)
		stdout, stderr = out.String(), errw.String()
	})
	return
}

func TestVirtualSweepSmoke(t *testing.T) {
	t.Parallel()
	out, errw, code := runVirtual(t, "sweep", "--sim-profile", "tiny", "-c", "1,4", "--output-tokens", "50", "-o", t.TempDir()+"/r.jsonl")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errw)
	}
	t.Log(out)
}
