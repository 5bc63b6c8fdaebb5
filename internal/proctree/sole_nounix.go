//go:build !unix

package proctree

import (
	"os/exec"
	"syscall"
)

func setpgid(*exec.Cmd) {}

// SignalServer cannot signal on this system.
func SignalServer(int, syscall.Signal) error { return errUnsupported }
