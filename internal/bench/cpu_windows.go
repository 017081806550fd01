package bench

import (
	"syscall"
	"time"
)

// cpuTime is the CPU this process has used, user and kernel.
func cpuTime() time.Duration {
	var creation, exit, kernel, user syscall.Filetime
	self, err := syscall.GetCurrentProcess()
	if err != nil || syscall.GetProcessTimes(self, &creation, &exit, &kernel, &user) != nil {
		return 0
	}
	ticks := func(f syscall.Filetime) time.Duration { // 100 ns each
		return time.Duration(uint64(f.HighDateTime)<<32|uint64(f.LowDateTime)) * 100
	}
	return ticks(kernel) + ticks(user)
}
