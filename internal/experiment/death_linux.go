package experiment

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
)

// deathSignal has the kernel SIGKILL the child when tokperf dies, whatever
// ends it (kill -9 included): no server outlives the run that started it.
func deathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }

// Adopt makes this process the parent of whatever its children leave
// behind (PR_SET_CHILD_SUBREAPER), so that a server that daemonises is
// still tokperf's to end (Reap). For main only: a test binary's children
// are other tests'.
func Adopt() {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno == 0 {
		adopting.Store(true)
	}
}

// adopting says Adopt took: only then are untracked children the servers'
// leftovers rather than a caller's own.
var adopting atomic.Bool

// killAdopted kills every child of this process that is not a tracked
// group's leader (those Reap has signalled): under Adopt, the daemons
// servers left behind.
func killAdopted() {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			if _, tracked := groups.Load(pid); !tracked && adopting.Load() {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
}
