//go:build unix

package experiment

import (
	"os"
	"os/exec"
	"syscall"
)

// OwnGroup starts cmd in a process group of its own, so stopping it stops
// whatever it started too (a shell's children, a server's workers), and on
// Linux has the kernel kill it when tokperf dies, however (deathSignal).
func OwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	deathSignal(cmd.SysProcAttr)
}

// SignalGroup sends SIGTERM (or SIGKILL with kill) to the group p leads.
func SignalGroup(p *os.Process, kill bool) {
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	syscall.Kill(-p.Pid, sig)
}

// shellCommand runs a command line through the shell.
func shellCommand(line string) *exec.Cmd { return exec.Command("/bin/sh", "-c", line) }
