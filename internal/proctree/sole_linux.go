//go:build linux

package proctree

import (
	"os"
	"syscall"
)

// descendants returns the live (not zombie) descendants of the calling
// process, and whether one of them is in the caller's process group.
func descendants() (pids []int, joined bool, ok bool) {
	procs, ok := snapshot()
	if !ok {
		return nil, false, false
	}
	self := os.Getpid()
	myPgrp := procs[self].pgrp
	reaches := descends(procs, self)
	for pid, p := range procs {
		if pid != self && !p.zombie && reaches(pid) {
			pids = append(pids, pid)
			joined = joined || p.pgrp == myPgrp
		}
	}
	return pids, joined, true
}

// sweepAll sends SIGKILL to every live descendant of the caller.
func sweepAll(pgid int) {
	pids, _, ok := descendants()
	if !ok {
		sweep(pgid, syscall.SIGKILL)
		return
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// reapAll collects every child of the caller that has exited.
func reapAll(int) {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err != nil || got <= 0 {
			return
		}
	}
}

// Descendants reports whether a descendant of the calling process is
// alive, and whether one of those is in the caller's own process group
// (without /proc: whether the process group pgid has a member).
func Descendants(pgid int) (alive, joined bool) {
	pids, joined, ok := descendants()
	if !ok {
		return Alive(pgid), false
	}
	return len(pids) > 0, joined
}
