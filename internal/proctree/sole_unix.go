//go:build unix

package proctree

import (
	"os/exec"
	"syscall"
)

func setpgid(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = false
	cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Pgid = true, 0
}

// SignalServer sends sig to the process group led by pid and to pid
// itself, which may have left that group (a server started by StartGroup
// can setpgid); a process that is gone is not an error.
func SignalServer(pid int, sig syscall.Signal) error {
	err := Signal(pid, sig)
	if kerr := syscall.Kill(pid, sig); kerr != nil && kerr != syscall.ESRCH && err == nil {
		err = kerr
	}
	return err
}
