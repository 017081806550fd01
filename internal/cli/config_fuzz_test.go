package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --config file of any content is applied or refused with a usage error
// that names the file; never a panic.
func FuzzConfig(f *testing.F) {
	for _, seed := range []string{
		"concurrency: [1, 4]\nrequests: 10\n",
		"timeout: 5m\nheader: ['X-A: b']\nextra-body: [{top_p: 0.9}]\n",
		"extra-body: {seed: 7}\n",
		"requets: 10\n",
		"concurrency: [1, -4]\n",
		"url: [\n",
		"config: x.yaml\n",
		"percentiles: [50, 99]\nslo-ttft: 250ms\n",
		"- a\n- b\n",
		"requests: ~\n",
		"header: {a: {b: c}}\n",
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, yaml string) {
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		fs := newFlags("sweep")
		var lf loadFlags
		lf.register(fs, "sweep")
		err := applyConfig(fs, path)
		if err == nil {
			return
		}
		if _, ok := err.(*usageError); !ok || !strings.Contains(err.Error(), "c.yaml") {
			t.Errorf("%q: %T %v: want a usage error naming the file", yaml, err, err)
		}
	})
}
