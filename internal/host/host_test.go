package host

import (
	"os"
	"path/filepath"
	"testing"
)

// Serial: it points the package's /proc root at a fixture tree.
func TestReadsFixtureProc(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("self/task/1/schedstat", "1000000000 500000000 10\n")
	write("self/task/2/schedstat", "3000000000 500000000 20\n")
	write("pressure/cpu", "some avg10=1.00 avg60=0.50 avg300=0.10 total=2000000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
	write("stat", "cpu  100 0 100 700 0 0 0 100 0 0\ncpu0 1 2 3\n")
	old := root
	root = dir
	defer func() { root = old }()
	a := Read()
	write("self/task/1/schedstat", "2000000000 1500000000 10\n")
	write("pressure/cpu", "some avg10=1.00 avg60=0.50 avg300=0.10 total=2500000\n")
	write("stat", "cpu  200 0 100 800 0 0 0 300 0 0\n")
	h := Between(a, Read())
	if h.CPURunS != 1 || h.CPUWaitS != 1 {
		t.Errorf("run %g s, wait %g s; want 1 and 1 (thread 1's growth)", h.CPURunS, h.CPUWaitS)
	}
	if h.WaitShare() != 0.5 {
		t.Errorf("wait share %g, want 0.5", h.WaitShare())
	}
	if h.PressureS != 0.5 {
		t.Errorf("pressure %g s, want 0.5", h.PressureS)
	}
	if h.Steal != 0.5 {
		t.Errorf("steal %g, want 0.5 (200 of 400 ticks)", h.Steal)
	}
	if len(h.Known) != 3 {
		t.Errorf("known %v, want all three", h.Known)
	}
	os.Remove(filepath.Join(dir, "pressure/cpu"))
	if h := Between(a, Read()); h.Has("pressure") || h.PressureS != 0 {
		t.Errorf("a missing PSI file reads as known: %+v", h)
	}
}
