package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
)

// A killed selftest's folder is found by the pid in its name and named; a
// running one's, and folders of other names, are left alone.
func TestStaleSelftestDirs(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no process to probe")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skip("no true to run:", err)
	}
	tmp := t.TempDir()
	dead := filepath.Join(tmp, "tokperf-selftest-"+strconv.Itoa(gone.Process.Pid)+"-123")
	for _, d := range []string{dead, filepath.Join(tmp, "tokperf-selftest-"+strconv.Itoa(os.Getpid())+"-456"), filepath.Join(tmp, "tokperf-selftest-x-1"), filepath.Join(tmp, "other-1-2")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	got := staleSelftestDirs(tmp)
	if len(got) != 1 || got[0].dir != dead || got[0].pid != gone.Process.Pid {
		t.Errorf("stale folders %v, want only %s", got, dead)
	}
}
