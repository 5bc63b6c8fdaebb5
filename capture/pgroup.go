//go:build unix

package capture

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// groupAlive reports whether process group pgid still has a member that is
// not a zombie. On Linux it reads /proc, so that zombies (dead, waiting for
// a parent or init to reap them) do not count as survivors; elsewhere it
// asks kill(-pgid, 0).
func groupAlive(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and ')'
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 3 {
			continue
		}
		pg, err := strconv.Atoi(string(f[2]))
		if err != nil || pg != pgid {
			continue
		}
		if string(f[0]) != "Z" && string(f[0]) != "X" {
			return true
		}
	}
	return false
}
