//go:build unix

package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/agent-trace-witness/witness/derive"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func joinGroupMain(role string) int {
	proxyGroup, err := syscall.Getpgid(os.Getppid())
	if role == "grandchild" {
		// the parent is the child, in the proxy's group already
		proxyGroup, err = syscall.Getpgid(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "joingroup:", err)
		return 1
	}
	switch role {
	case "grandchild":
		fmt.Fprintf(os.Stderr, "joingroup: grandchild %d\n", os.Getpid())
		for {
			time.Sleep(time.Hour)
		}
	case "child":
		gc := exec.Command(os.Args[0])
		gc.Env = append(os.Environ(), envJoinGroup+"=grandchild")
		gc.Stderr = os.Stderr
		gc.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: proxyGroup}
		if err := gc.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "joingroup: start grandchild:", err)
			return 1
		}
		return 0 // the grandchild is orphaned
	}
	if err := syscall.Setpgid(0, proxyGroup); err != nil {
		fmt.Fprintln(os.Stderr, "joingroup: setpgid into the proxy's group:", err)
		return 1
	}
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), envJoinGroup+"=child")
	child.Stderr = os.Stderr
	if err := child.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "joingroup: child:", err)
		return 1
	}
	br := bufio.NewReader(os.Stdin)
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			return 0
		}
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(line, &m) == nil && m.ID != nil {
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"joingroup","version":"0"}}}`+"\n", m.ID)
		}
	}
}

// TestNoSurvivorsInTheProxysGroup: a proxy process (SoleChild, as the
// witness proxy binary) starts the server in a process group of its own
// inside its session. A hostile server moves into the proxy's own process
// group and double-forks a grandchild that joins that group too; others
// leave a child in a new session (setsid) or a daemonised grandchild
// (doublefork). When the session ends, none of those processes survives,
// the proxy exits with the server's status, and the cassette says what
// was killed (and that a process had moved into the proxy's group).
func TestNoSurvivorsInTheProxysGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finding a process that left the server's group needs /proc and a child subreaper (Linux)")
	}
	envCmd, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env command to set the server's role")
	}
	for _, c := range []struct {
		name    string
		command []string
		re      string
		joined  bool
	}{
		// the server is the test binary again, in the hostile role
		{"joingroup", []string{envCmd, envJoinGroup + "=server", os.Args[0]}, `joingroup: grandchild (\d+)`, true},
		{"setsid", []string{hostile(t, "setsid")}, `setsid: child (\d+)`, false},
		{"doublefork", []string{hostile(t, "doublefork")}, `doublefork: grandchild (\d+)`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "rec")
			cmd := exec.Command(os.Args[0], c.command...)
			cmd.Env = append(os.Environ(), envProxyMain+"="+out)
			ownGroup(cmd)
			in, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer killGroup(cmd)
			errLines := bufio.NewReader(stderr)
			line, err := errLines.ReadString('\n')
			m := regexp.MustCompile(c.re).FindStringSubmatch(line)
			if err != nil || m == nil {
				t.Fatalf("no escaped process reported: %q %v", line, err)
			}
			escaped, _ := strconv.Atoi(m[1])
			if g, err := getpgid(escaped); c.joined && (err != nil || g != cmd.Process.Pid) {
				t.Fatalf("the grandchild's group is %d (%v), want the proxy's %d: the attack did not happen", g, err, cmd.Process.Pid)
			}
			go io.Copy(io.Discard, errLines)
			io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`+"\n")
			if l, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.Contains(l, `"`+c.name+`"`) {
				t.Fatalf("initialize: %q %v", l, err)
			}
			in.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("proxy exit: %v, want status 0 (the server's)", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the proxy did not exit after its stdin closed")
			}
			deadline := time.Now().Add(3 * time.Second)
			for procAlive(escaped) {
				if time.Now().After(deadline) {
					t.Fatalf("process %d, started by the server, survived the proxy", escaped)
				}
				time.Sleep(20 * time.Millisecond)
			}
			cas, _ := os.ReadFile(filepath.Join(out, derive.CassetteFile))
			want := `"signal":"SIGKILL","detail":"processes the server started outlived it`
			if c.joined {
				want += ` (one had moved into the proxy's own process group)"`
			} else {
				want += `"`
			}
			if !strings.Contains(string(cas), want) {
				t.Errorf("the cassette does not hold %s:\n%s", want, cas)
			}
		})
	}
}
