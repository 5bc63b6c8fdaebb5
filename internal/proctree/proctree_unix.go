//go:build unix

package proctree

import "syscall"

// Supported returns nil: on Unix a server runs in its own session, so its
// process group can be signalled and its tree found at the end.
func Supported() error { return nil }

func setsid(a *syscall.SysProcAttr) { a.Setsid = true }

// Signal sends sig to the process group led by pid; a group that is gone
// is not an error.
func Signal(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	if err == syscall.ESRCH {
		return nil
	}
	return err
}
