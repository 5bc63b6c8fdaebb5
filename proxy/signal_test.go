package proxy

import (
	"bufio"
	"context"
	"github.com/agent-trace-witness/witness/derive"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envProxyMain makes the test binary act as `witness proxy --out
// $envProxyMain -- ARGS...` (see TestMain), with real signal handling, so
// that a test can signal a proxy process; like the binary, it starts no
// other child than the server (SoleChild).
const envProxyMain = "WITNESS_PROXY_TEST_MAIN"

func proxyMain(out string, command []string) int {
	debug.SetMemoryLimit(MemoryLimit) // as runProxy does
	debug.SetGCPercent(GCPercent)
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	res, err := Run(context.Background(), Options{OutDir: out, Command: command, Stdin: os.Stdin, Stdout: os.Stdout,
		Stderr: os.Stderr, Signals: sigs, Getenv: os.Getenv, KillGrace: time.Second, SoleChild: true})
	if res == nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 5
	}
	return res.Outcome.ExitStatus
}

// TestProxyProcessForwardsSIGTERM signals a proxy process: the server's
// whole process group gets the signal, the proxy exits with 128+15, and no
// process of the group survives.
func TestProxyProcessForwardsSIGTERM(t *testing.T) {
	out := filepath.Join(t.TempDir(), "rec")
	cmd := exec.Command(os.Args[0], echo(t), "-child")
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
	m := regexp.MustCompile(`echo server: child (\d+)`).FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("no grandchild reported: %q %v", line, err)
	}
	grandchild, _ := strconv.Atoi(m[1])
	serverGroup, err := getpgid(grandchild)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
	if l, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || !strings.Contains(l, `"result":{}`) {
		t.Fatalf("ping: %q %v", l, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, errLines)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errorsAs(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
			t.Errorf("proxy exit: %v, want status 143", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the proxy did not exit after SIGTERM")
	}
	waitGroupGone(serverGroup, 2*time.Second)
	if groupAlive(serverGroup) {
		t.Errorf("the server's process group %d survived", serverGroup)
	}
	cas, _ := os.ReadFile(filepath.Join(out, derive.CassetteFile))
	if !strings.Contains(string(cas), `"life":"signal","signal":"SIGTERM","detail":"forwarded from the host"`) {
		t.Errorf("no signal record in the cassette:\n%s", cas)
	}
}
