package proxy

import (
	"os"
	"os/exec"
	"syscall"

	"github.com/agent-trace-witness/witness/internal/proctree"
)

// startInSession starts cmd as the leader of a new session (so of a new
// process group), so that a signal can reach the server and what it
// started, and so that package proctree can find every process of its
// tree at the end, even those that left its group. On Linux, if the proxy
// dies abruptly, the kernel kills the server (deathSignal).
// The returned function marks the server's session as no longer live.
func startInSession(cmd *exec.Cmd) (unregister func(), err error) {
	cmd.SysProcAttr = deathSignal()
	return proctree.Start(cmd)
}

// exitStatus turns a finished process state into the status the proxy exits
// with: the server's own code, or 128+N when signal N killed it (the shell
// convention).
func exitStatus(ps *os.ProcessState) int {
	if ps == nil {
		return 1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
