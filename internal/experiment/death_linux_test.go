package experiment

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes this test binary a stand-in tokperf (TestHelperTokperf):
// it starts a server as tokperf does and then ends as the value says.
const helperEnv = "TOKPERF_TEST_HELPER"

// TestHelperTokperf is not a test: run by TestServersDieWithTokperf as a
// process, it starts `sleep` as a configuration's server, writes the
// server's pid where TOKPERF_TEST_PID says, and then is killed ("kill"),
// or calls Reap and returns ("daemon": the server left its group).
func TestHelperTokperf(t *testing.T) {
	t.Parallel()
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("a helper process of TestServersDieWithTokperf")
	}
	pidFile := os.Getenv("TOKPERF_TEST_PID")
	cmd := "echo $$ > " + pidFile + ".tmp; mv " + pidFile + ".tmp " + pidFile + "; exec sleep 300"
	if mode == "daemon" {
		Adopt()
		cmd = "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > " + pidFile + ".tmp; mv " + pidFile + ".tmp " + pidFile
	}
	if _, err := Start(Config{Name: "server", Command: []string{cmd}, Shell: true}, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	for !exists(pidFile) {
		time.Sleep(10 * time.Millisecond)
	}
	if mode == "daemon" {
		time.Sleep(200 * time.Millisecond) // the shell has exited: sleep is adopted
		Reap()
		return
	}
	time.Sleep(time.Minute) // killed before this ends
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// A configuration's server dies with tokperf however tokperf ends: kill -9
// (the parent-death signal), or a server that daemonised out of its
// process group (adopted, then reaped).
//
// Serial: real time: processes started and killed, waited for up to 10 s.
func TestServersDieWithTokperf(t *testing.T) {
	for _, mode := range []string{"kill", "daemon"} {
		t.Run(mode, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			helper := exec.Command(os.Args[0], "-test.run=^TestHelperTokperf$")
			helper.Env = append(os.Environ(), helperEnv+"="+mode, "TOKPERF_TEST_PID="+pidFile)
			if err := helper.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for !exists(pidFile) && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				helper.Process.Kill()
				t.Fatal("the helper never started its server")
			}
			server, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			t.Cleanup(func() { syscall.Kill(server, syscall.SIGKILL) })
			if mode == "kill" {
				helper.Process.Signal(syscall.SIGKILL)
			}
			helper.Wait()
			for alive(server) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if alive(server) {
				t.Errorf("the server (pid %d) outlived tokperf", server)
			}
		})
	}
}

// alive says pid runs (a zombie, dead but not yet reaped, is not alive).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(after, "Z")
}
