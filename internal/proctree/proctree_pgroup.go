//go:build unix && !linux

package proctree

import "syscall"

// This is the fallback of darwin and the BSDs: no /proc to walk and no
// child subreaper, so a server's tree is its process group.

// Subreaper does nothing on this system: orphans go to init.
func Subreaper() {}

// sweep signals the process group sid: without /proc and a subreaper, a
// process that left the group is out of reach.
func sweep(sid int, sig syscall.Signal) int {
	if syscall.Kill(-sid, sig) == nil {
		return 1
	}
	return 0
}

func reap(sid int) {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-sid, &ws, syscall.WNOHANG, nil)
		if err != nil || got <= 0 {
			return
		}
	}
}

// Alive reports whether the process group sid still has a member.
func Alive(sid int) bool { return syscall.Kill(-sid, 0) == nil }
