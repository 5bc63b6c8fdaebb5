package proxy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var hostileBuilt sync.Map // name -> path

// hostile builds testdata/hostile/NAME once and returns its path.
func hostile(t *testing.T, name string) string {
	t.Helper()
	echo(t) // makes buildDir
	if p, ok := hostileBuilt.Load(name); ok {
		return p.(string)
	}
	out := filepath.Join(buildDir, "hostile-"+name)
	if b, err := exec.Command("go", "build", "-o", out, "../testdata/hostile/"+name).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, b)
	}
	hostileBuilt.Store(name, out)
	return out
}

// procAlive reports whether pid is a live process (not a zombie).
func procAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// TestNoSurvivorsOutsideTheGroup: a server whose child left its process
// group (setsid) or was orphaned by a double fork: the proxy still finds
// that process and ends it, and the outcome reports leftovers.
func TestNoSurvivorsOutsideTheGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finding processes outside the group needs /proc and a child subreaper (Linux); see docs/design/platforms.md")
	}
	for _, c := range []struct{ name, re string }{
		{"setsid", `setsid: child (\d+)`},
		{"doublefork", `doublefork: grandchild (\d+)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := hostile(t, c.name)
			var pid int
			p := viaProxy(t, &Forwarder{Command: []string{bin}, DrainWait: 300 * time.Millisecond},
				func(w io.WriteCloser, r io.Reader) string {
					io.WriteString(w, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`+"\n")
					line, _ := bufio.NewReader(r).ReadString('\n')
					w.Close()
					io.Copy(io.Discard, r)
					return line
				})
			m := regexp.MustCompile(c.re).FindStringSubmatch(p.stderr)
			if m == nil {
				t.Fatalf("the server did not report its escaped process: %q", p.stderr)
			}
			pid, _ = strconv.Atoi(m[1])
			if sid, err := getsid(pid); err == nil && sid == p.pid {
				t.Fatalf("process %d did not leave the server's session", pid)
			}
			deadline := time.Now().Add(3 * time.Second)
			for procAlive(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("process %d, started by the server outside its group, survived the proxy", pid)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if !p.out.Leftovers || !strings.Contains(p.host, `"serverInfo":{"name":"`+c.name) {
				t.Errorf("outcome %+v, host %q", p.out, p.host)
			}
		})
	}
}

// getsid returns the session of pid from /proc.
func getsid(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return strconv.Atoi(f[3])
}

// TestStdinGraceEndsServer: a server that ignores its stdin closing is
// SIGTERMed once the grace after the host's EOF has passed, and one that
// ignores SIGTERM too is SIGKILLed after the kill grace: the proxy never
// waits forever, and the cassette says what it did.
func TestStdinGraceEndsServer(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		sigs   []string
	}{
		{"ignoreeof", 128 + 15, []string{"SIGTERM"}},
		{"stubborn", 128 + 9, []string{"SIGTERM", "SIGKILL"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := hostile(t, c.name)
			p := viaProxy(t, &Forwarder{Command: []string{bin}, StdinGrace: 200 * time.Millisecond, KillGrace: 200 * time.Millisecond, DrainWait: 300 * time.Millisecond},
				func(w io.WriteCloser, r io.Reader) string {
					io.WriteString(w, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`+"\n")
					line, _ := bufio.NewReader(r).ReadString('\n')
					w.Close()
					io.Copy(io.Discard, r)
					return line
				})
			if p.out.ExitStatus != c.status {
				t.Errorf("exit status %d, want %d (%+v)", p.out.ExitStatus, c.status, p.out)
			}
			var sigs []string
			for _, l := range p.sink.lives {
				if strings.HasPrefix(l, "signal:") {
					sigs = append(sigs, strings.TrimPrefix(l, "signal:"))
				}
			}
			if fmt.Sprint(sigs) != fmt.Sprint(c.sigs) {
				t.Errorf("signals recorded %v, want %v", sigs, c.sigs)
			}
			// viaProxy checks that nothing of the server is left
		})
	}
}
