package k8s_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The Kubernetes libraries are the tests' only and the image builder is
// scripts/image's: the tokperf binary links none of them (k8s.io/api alone
// would add megabytes).
func TestBinaryLinksNoKubernetes(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-deps", "./cmd/tokperf")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps ./cmd/tokperf lists %d packages", len(deps))
	}
	found := false
	for _, d := range deps {
		if strings.HasPrefix(d, "k8s.io/") || strings.HasPrefix(d, "sigs.k8s.io/") || strings.Contains(d, "jsonschema") || strings.Contains(d, "go-containerregistry") {
			t.Errorf("the binary links %s", d)
		}
		found = found || d == "github.com/tokperf/tokperf/internal/k8s"
	}
	if !found {
		t.Error("the binary does not link internal/k8s: the check looks at the wrong binary")
	}
}
