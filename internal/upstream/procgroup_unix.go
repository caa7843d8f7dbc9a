//go:build unix

package upstream

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the command in a process group of its own, so that a kill reaches
// the processes it started too (a launcher such as npx or uv runs the server as its child).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup kills the command's process group.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		_ = cmd.Process.Kill()
	}
}
