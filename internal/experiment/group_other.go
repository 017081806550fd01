//go:build !unix

package experiment

import (
	"os"
	"os/exec"
	"runtime"
)

// OwnGroup does nothing where process groups are not Unix ones.
func OwnGroup(*exec.Cmd) {}

// SignalGroup ends the process itself (there is no SIGTERM to ask first).
func SignalGroup(p *os.Process, _ bool) { p.Kill() }

// shellCommand runs a command line through the system's shell.
func shellCommand(line string) *exec.Cmd {
	if runtime.GOOS == "windows" {
		return exec.Command("cmd", "/C", line)
	}
	return exec.Command("/bin/sh", "-c", line)
}
