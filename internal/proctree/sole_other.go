//go:build !linux

package proctree

import "syscall"

// Without /proc, the sweep of EndAll is that of End: the process group.

func sweepAll(pgid int) { sweep(pgid, syscall.SIGKILL) }

func reapAll(pgid int) { reap(pgid) }

// Descendants reports whether the process group pgid has a member (see
// the Linux version); joined is always false here.
func Descendants(pgid int) (alive, joined bool) { return Alive(pgid), false }
