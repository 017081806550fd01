package host

import (
	"syscall"
	"testing"
	"time"
)

// Serial: it measures this process's own CPU wait while it spins, which
// parallel tests would disturb.
func TestOwnThreadsRunAndWait(t *testing.T) {
	// Spin until the kernel's other account of this process's CPU time
	// (getrusage) has grown 50 ms, however busy the machine.
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	a, c0 := Read(), cpu()
	for give := time.Now().Add(10 * time.Second); cpu()-c0 < 50*time.Millisecond && time.Now().Before(give); {
	}
	spun := cpu() - c0
	h := Between(a, Read())
	if !h.Has("schedstat") {
		t.Skip("no schedstat on this kernel")
	}
	if h.CPURunS < 0.8*spun.Seconds() {
		t.Errorf("spun %v of CPU and read %.3f s on a CPU", spun, h.CPURunS)
	}
}
