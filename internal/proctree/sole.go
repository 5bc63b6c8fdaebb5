package proctree

import (
	"os/exec"
	"time"
)

// A process that starts no other child than the server (the witness
// proxy binary) can do without the server's own session. StartGroup
// starts the server as the leader of a new process group in the caller's
// own session, so that both share the kernel's autogroup scheduling (a
// server in a session of its own is woken later; docs/design/proxy.md,
// "Latency"). The session rule of Sweep no longer finds the server's tree
// then, and a process of that tree can setpgid into the caller's group;
// but with the caller a child subreaper, every process of that tree stays
// a descendant of the caller whatever group or session it moves to, and
// the caller has no descendant that is not the server's. EndAll ends
// every descendant of the caller and reaps every child.

// StartGroup starts cmd as the leader of a new process group (it sets
// SysProcAttr.Setpgid) in the caller's session. Only a caller that starts
// no other child may use it: EndAll, which ends what the server left,
// ends every descendant of the caller.
func StartGroup(cmd *exec.Cmd) error {
	if err := Supported(); err != nil {
		return err
	}
	setpgid(cmd)
	return cmd.Start()
}

// EndAll kills (SIGKILL) every descendant of the calling process, after
// the server (the leader of the process group pgid) was reaped, reaps
// every child, and waits up to d for them to be gone. It reports whether
// some still lived after d. Without /proc it falls back to the process
// group pgid (see End).
func EndAll(pgid int, d time.Duration) (survivors bool) {
	deadline := time.Now().Add(d)
	for {
		sweepAll(pgid)
		reapAll(pgid)
		if alive, _ := Descendants(pgid); !alive {
			return false
		}
		if time.Now().After(deadline) {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
}
