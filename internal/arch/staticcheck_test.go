package arch

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// staticcheck (pinned as a tool in go.mod, its checks in staticcheck.conf)
// finds nothing in any package. It compiles and checks the whole module,
// a minute or more on two cores, so it runs with TOKPERF_STATICCHECK=1,
// or TOKPERF_REQUIRE_STATICCHECK=1 (.ci/run).
func TestStaticcheck(t *testing.T) {
	t.Parallel()
	if os.Getenv("TOKPERF_STATICCHECK") != "1" && os.Getenv("TOKPERF_REQUIRE_STATICCHECK") != "1" {
		t.Skip("runs staticcheck over the module: TOKPERF_STATICCHECK=1")
	}
	cmd := exec.Command("go", "tool", "staticcheck", "./...")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("staticcheck: %v\n%s", err, out)
	}
}
