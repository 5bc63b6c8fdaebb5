package proxy

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// startInGroup starts cmd as the leader of a new process group, so that a
// signal can reach the server and everything it started. If the proxy dies
// abruptly, the kernel kills the server (Pdeathsig).
func startInGroup(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd.Start()
}

// signalGroup sends sig to the process group led by pid. A group that is
// already gone is not an error.
func signalGroup(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// groupAlive reports whether any live process (not a zombie) of the group
// led by pid still exists. It reads /proc; without /proc it asks the kernel,
// which also counts zombies.
func groupAlive(pid int) bool {
	if syscall.Kill(-pid, 0) != nil {
		return false
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may contain spaces and ')'
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if f[2] == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}

// becomeSubreaper makes orphaned descendants of the proxy its children
// rather than init's, so that reapGroup can collect them.
func becomeSubreaper() {
	const prSetChildSubreaper = 36
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
}

// reapGroup collects the exit status of any finished member of the group led
// by pid that was reparented to the proxy.
func reapGroup(pid int) {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-pid, &ws, syscall.WNOHANG, nil)
		if err != nil || got <= 0 {
			return
		}
	}
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

// waitGroupGone polls until no process of the group led by pid is left
// (killed orphans are reaped by init shortly after SIGKILL) or d passes.
func waitGroupGone(pid int, d time.Duration) {
	deadline := time.Now().Add(d)
	for groupAlive(pid) && time.Now().Before(deadline) {
		reapGroup(pid)
		time.Sleep(5 * time.Millisecond)
	}
	reapGroup(pid)
}
