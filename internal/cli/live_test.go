package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --live refuses what it cannot serve, naming the flag and what is wrong,
// before anything is sent: an unknown kind, no address, an address that
// is not host:port, virtual time, and an address already taken (which
// leaves no result file behind).
func TestLiveBadInput(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown kind", []string{"run", "--live", "grafana=127.0.0.1:9464"}, 2, `--live "grafana=127.0.0.1:9464": want KIND=ADDR, KIND one of prometheus`},
		{"no address", []string{"soak", "--live", "prometheus"}, 2, `--live "prometheus": say where to listen, e.g. prometheus=127.0.0.1:9464`},
		{"not host:port", []string{"sweep", "--live", "prometheus=9464"}, 2, `--live "prometheus=9464": 9464 is not host:port`},
		{"virtual time", []string{"run", "--virtual", "--sim-profile", "tiny", "--live", "prometheus=127.0.0.1:0", "-o", filepath.Join(dir, "v.jsonl")}, 2, "not --live"},
		{"address taken", []string{"run", "--sim-profile", "tiny", "--requests", "2", "--live", "prometheus=" + taken.Addr().String(), "-o", filepath.Join(dir, "t.jsonl")}, 2, "--live prometheus=" + taken.Addr().String() + ": "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			code := Run(context.Background(), tc.args, strings.NewReader(""), &out, &errw)
			if code != tc.code || !strings.Contains(errw.String(), tc.want) {
				t.Errorf("exit %d, want %d; stderr %q does not say %q", code, tc.code, errw.String(), tc.want)
			}
			if strings.Contains(errw.String(), "panic") {
				t.Errorf("a panic:\n%s", errw.String())
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "t.jsonl")); err == nil {
		t.Errorf("a run whose --live address was taken left a result file")
	}
}
