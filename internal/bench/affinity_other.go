//go:build !linux

package bench

import "errors"

// cpuSet is a set of CPUs a process may run on (Linux only).
type cpuSet struct{}

var errNoAffinity = errors.New("CPU affinity is set on Linux only")

func allowedCPUs() ([]int, error) { return nil, errNoAffinity }
func onlyCPU(int) cpuSet          { return cpuSet{} }
func pinThreads(cpuSet) error     { return errNoAffinity }

// Set adds cpu to the set (nothing, off Linux).
func (cpuSet) Set(int) {}
