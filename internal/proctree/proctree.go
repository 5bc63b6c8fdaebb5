// Package proctree finds and ends every process a recorded server started,
// including those that left its process group (setsid, double fork).
//
// A server is started as the leader of a new session (Setsid), and the
// process that starts it becomes a child subreaper (Linux), so that every
// orphan of the server's tree is reparented to it rather than to init. A
// process can leave a process group or start a new session, but it can
// never rejoin the session of the process that started the server: every
// process of the server's tree therefore has a session id other than the
// starter's. Sweep ends every descendant of the calling process whose
// session is not the caller's own and not that of another live server of
// the same process (Register), and reaps those reparented to it.
//
// Without /proc and a subreaper (darwin and the BSDs) the sweep falls back
// to the server's process group, which a setsid or double fork escapes.
// Windows has neither process groups nor signals: Start refuses there
// (Supported says why). docs/design/platforms.md gives the reasons.
package proctree

import (
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// live holds the sessions of servers still running in this process, so that
// the sweep after one server ends spares the others. It is process-wide
// state because the subreaper it complements is: every orphan of every
// server of this process comes back to the same process.
var live = struct {
	mu   sync.Mutex
	sids map[int]int
}{sids: map[int]int{}}

// Start starts cmd as the leader of a new session (it sets
// SysProcAttr.Setsid) and records its session as live until the returned
// function is called. Start and the sweeps exclude each other, so that a
// sweep never sees a server that was started but not yet recorded.
func Start(cmd *exec.Cmd) (unregister func(), err error) {
	if err := Supported(); err != nil {
		return nil, err
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	setsid(cmd.SysProcAttr)
	live.mu.Lock()
	defer live.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sid := cmd.Process.Pid
	live.sids[sid]++
	var once sync.Once
	return func() {
		once.Do(func() {
			live.mu.Lock()
			if live.sids[sid]--; live.sids[sid] <= 0 {
				delete(live.sids, sid)
			}
			live.mu.Unlock()
		})
	}, nil
}

// End kills (SIGKILL) what is left of the tree of the server whose session
// is sid, after the server itself was reaped, and waits up to d for those
// processes to be gone (reaping the ones reparented to this process). It
// reports whether any process was left to kill, and whether some still
// lived after d.
func End(sid int, d time.Duration) (leftovers, survivors bool) {
	deadline := time.Now().Add(d)
	for {
		n := sweep(sid, syscall.SIGKILL)
		if n > 0 {
			leftovers = true
		}
		reap(sid)
		if !Alive(sid) {
			return leftovers, false
		}
		if time.Now().After(deadline) {
			return leftovers, true
		}
		time.Sleep(5 * time.Millisecond)
	}
}
