//go:build unix && !linux

package experiment

import "syscall"

// deathSignal does nothing where there is no parent-death signal: Reap,
// on tokperf's own ways out, is what ends the servers there.
func deathSignal(*syscall.SysProcAttr) {}
