package capture

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestNoSurvivorsOutsideTheGroup: processes a server started outside its
// process group (setsid, double fork) are found and ended by Close.
//
// Not parallel: the escaped processes start sessions of their own and come
// back to this test process (the subreaper), so a parallel test's sweep
// would count them as its own server's leftovers.
func TestNoSurvivorsOutsideTheGroup(t *testing.T) {
	for _, c := range []struct{ name, re string }{
		{"setsid", `setsid: child (\d+)`},
		{"doublefork", `doublefork: grandchild (\d+)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := lvBuildTestServer(t, "testdata/hostile/"+c.name)
			var cas lockedBuffer
			var evs bytes.Buffer
			l, err := openLive(LiveOptions{Command: bin, Env: lvServerEnv(), Cassette: &cas, Events: &evs, Getenv: lvFrozenEnv,
				Timeout: 5 * time.Second, StdinGrace: 200 * time.Millisecond, TermGrace: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			re := regexp.MustCompile(c.re)
			var m []string
			for deadline := time.Now().Add(5 * time.Second); m == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				m = re.FindStringSubmatch(cas.String())
			}
			if m == nil {
				t.Fatalf("the server did not report its escaped process:\n%s", cas.String())
			}
			pid, _ := strconv.Atoi(m[1])
			if !pidAlive(pid) {
				t.Fatalf("process %d is not running before Close", pid)
			}
			_ = l.Close()
			for deadline := time.Now().Add(3 * time.Second); pidAlive(pid); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("process %d, started by the server outside its group, survived Close", pid)
				}
			}
		})
	}
}

// pidAlive reports whether pid is a live process (not a zombie).
func pidAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}
