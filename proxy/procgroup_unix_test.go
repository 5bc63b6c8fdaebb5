//go:build unix

package proxy

import (
	"os/exec"
	"syscall"
)

// ownGroup makes cmd the leader of its own process group, so that
// killGroup reaches what it starts.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// killGroup SIGKILLs the process group of a started cmd.
func killGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }

// getpgid returns the process group of pid.
func getpgid(pid int) (int, error) { return syscall.Getpgid(pid) }
