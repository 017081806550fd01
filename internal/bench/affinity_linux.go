package bench

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// cpuSet is a set of CPUs a process may run on.
type cpuSet = unix.CPUSet

// allowedCPUs is the CPUs this process may run on, lowest first.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("reading the CPU affinity: %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// onlyCPU is the set holding cpu alone.
func onlyCPU(cpu int) cpuSet {
	var set unix.CPUSet
	set.Set(cpu)
	return set
}

// pinThreads sets every thread of this process to run on set. A thread
// started meanwhile inherits its parent's set, so two passes leave none
// behind; a child process started after it inherits it too.
func pinThreads(set cpuSet) error {
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("listing this process's threads: %w", err)
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("setting thread %d's CPU affinity: %w", tid, err)
			}
		}
	}
	return nil
}
