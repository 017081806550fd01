package bench

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tokperf/tokperf/internal/experiment"
)

// A configuration whose port something already holds (a server an earlier,
// killed run left) is not started, and its reason names the port; it was
// measured and then called dead mid-sweep.
func TestConfigPortTaken(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	c := experiment.Config{Name: "b", URL: "http://" + ln.Addr().String(), Command: []string{"touch " + ran}, Shell: true, GraceS: 1, ReadyTimeoutS: 1}
	o := runConfig(t.Context(), &experiment.File{}, c, ConfigPlan{}, dir, 0, 1, &Env{})
	if !strings.Contains(o.Reason, ln.Addr().String()) || !strings.Contains(o.Reason, "not started") {
		t.Errorf("reason %q, want one naming %s as taken", o.Reason, ln.Addr())
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("its command ran")
	}
}
