//go:build linux

package proctree

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// Subreaper makes the calling process a child subreaper: orphaned
// descendants are reparented to it rather than to init.
func Subreaper() {
	const prSetChildSubreaper = 36
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
}

type proc struct {
	ppid, pgrp, sid int
	zombie          bool
}

// snapshot reads every process's parent, group, session and state.
func snapshot() (map[int]proc, bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, false
	}
	m := make(map[int]proc, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session ...; comm may hold spaces and ')'
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 4 {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		pgrp, _ := strconv.Atoi(string(f[2]))
		sid, _ := strconv.Atoi(string(f[3]))
		m[pid] = proc{ppid: ppid, pgrp: pgrp, sid: sid, zombie: f[0][0] == 'Z' || f[0][0] == 'X'}
	}
	return m, true
}

// others returns the live sessions other than sid; live.mu is held.
func others(sid int) map[int]bool {
	m := map[int]bool{}
	for s := range live.sids {
		if s != sid {
			m[s] = true
		}
	}
	return m
}

// descends returns a test of whether the parent chain of a process in procs
// reaches self, memoised across calls (a chain longer than 4096 does not).
func descends(procs map[int]proc, self int) func(pid int) bool {
	below := map[int]bool{} // memo: does the chain of pid reach self?
	var reaches func(pid, depth int) bool
	reaches = func(pid, depth int) bool {
		if v, ok := below[pid]; ok {
			return v
		}
		p, ok := procs[pid]
		if !ok || pid <= 1 || depth > 4096 {
			return false
		}
		v := p.ppid == self || reaches(p.ppid, depth+1)
		below[pid] = v
		return v
	}
	return func(pid int) bool { return reaches(pid, 0) }
}

// members returns the processes of the server tree of session sid: the
// descendants of this process whose session is neither this process's nor
// another live server's (see the package comment), plus, as a fallback,
// every process of the process group sid. live.mu is held, so that no
// server starts meanwhile.
func members(sid int) (pids []int, procs map[int]proc) {
	procs, ok := snapshot()
	self := os.Getpid()
	if !ok {
		return nil, nil
	}
	mySid := procs[self].sid
	skip := others(sid)
	reaches := descends(procs, self)
	for pid, p := range procs {
		if pid == self {
			continue
		}
		if p.pgrp == sid || (p.sid != mySid && !skip[p.sid] && reaches(pid)) {
			pids = append(pids, pid)
		}
	}
	return pids, procs
}

// sweep sends sig to every live member of the server tree of sid and
// returns how many it signalled.
func sweep(sid int, sig syscall.Signal) int {
	live.mu.Lock()
	defer live.mu.Unlock()
	pids, procs := members(sid)
	if procs == nil {
		if syscall.Kill(-sid, sig) == nil {
			return 1
		}
		return 0
	}
	n := 0
	for _, pid := range pids {
		if procs[pid].zombie {
			continue
		}
		if syscall.Kill(pid, sig) == nil {
			n++
		}
	}
	return n
}

// reap collects the members of the tree of sid that were reparented to
// this process and have exited. It never waits for another child of this
// process (os/exec waits for those).
func reap(sid int) {
	live.mu.Lock()
	defer live.mu.Unlock()
	pids, procs := members(sid)
	self := os.Getpid()
	for _, pid := range pids {
		if p := procs[pid]; p.ppid == self && p.zombie {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
	}
}

// Alive reports whether a member of the server tree of session sid is
// still alive (zombies do not count).
func Alive(sid int) bool {
	live.mu.Lock()
	defer live.mu.Unlock()
	pids, procs := members(sid)
	if procs == nil {
		return syscall.Kill(-sid, 0) == nil
	}
	for _, pid := range pids {
		if !procs[pid].zombie {
			return true
		}
	}
	return false
}
