//go:build unix

package capture

import (
	"bytes"
	"errors"
	"syscall"
	"testing"
	"time"
)

// TestNoSurvivors checks that the whole process group of a server is gone
// after Close, including a grandchild that ignores SIGTERM.
func TestNoSurvivors(t *testing.T) {
	bin := lvBuildTestServer(t, "testdata/hostile/stubborn")
	var cas, evs bytes.Buffer
	l, err := openLive(LiveOptions{Command: bin, Env: lvServerEnv(), Cassette: &cas, Events: &evs, Getenv: lvFrozenEnv,
		Timeout: 2 * time.Second, StdinGrace: 100 * time.Millisecond, TermGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pgid := l.Transport.(*stdioClient).PGID()
	if err := syscall.Kill(-pgid, 0); err != nil {
		t.Fatalf("group not alive before close: %v", err)
	}
	if err := l.Close(); err == nil {
		t.Fatal("want an error for a server that needed SIGKILL")
	}
	// GroupAlive ignores zombies: a killed grandchild is reparented to init,
	// which may reap it late (or never, in a container without an init)
	deadline := time.Now().Add(3 * time.Second)
	for groupAlive(pgid) {
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has live members", pgid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(-pgid, 0); err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatal(err)
	}
}
