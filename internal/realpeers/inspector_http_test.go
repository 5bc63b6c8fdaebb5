package realpeers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/internal/canon"
)

// lockedBuffer is a bytes.Buffer a process writes to while the test reads.
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

// listening matches the line both listening commands print on stderr.
var listening = regexp.MustCompile(`listening on (http://[0-9.]+:[0-9]+)`)

// daemon is a long-running peer: server-everything over HTTP, `witness
// proxy --listen` or `witness serve --listen`.
type daemon struct {
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{}
	err    error
	URL    string
}

// startDaemon starts argv with env and waits until it listens: on port when
// port is not 0, else at the URL it prints on stderr ("listening on ...").
func startDaemon(t *testing.T, argv, env []string, port int) *daemon {
	t.Helper()
	d := &daemon{stderr: &lockedBuffer{}, done: make(chan struct{})}
	d.cmd = exec.Command(argv[0], argv[1:]...)
	d.cmd.Dir = t.TempDir()
	d.cmd.Env = env
	d.cmd.Stderr = d.stderr
	d.cmd.Stdout = d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	go func() { d.err = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			d.cmd.Process.Kill()
			<-d.done
		}
	})
	deadline := time.Now().Add(runLimit)
	for time.Now().Before(deadline) {
		select {
		case <-d.done:
			t.Fatalf("%v ended before it listened: %v\n%s", argv, d.err, tail(d.stderr.String()))
		default:
		}
		if port == 0 {
			if m := listening.FindStringSubmatch(d.stderr.String()); m != nil {
				d.URL = m[1]
				return d
			}
		} else if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			d.URL = "http://127.0.0.1:" + strconv.Itoa(port)
			return d
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%v did not listen within %v\n%s", argv, runLimit, tail(d.stderr.String()))
	return nil
}

// stop sends SIGTERM and returns the exit code.
func (d *daemon) stop(t *testing.T) int {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(runLimit):
		d.cmd.Process.Kill()
		<-d.done
		t.Fatalf("%v did not stop at SIGTERM\n%s", d.cmd.Args, tail(d.stderr.String()))
	}
	var ee *exec.ExitError
	switch {
	case errors.As(d.err, &ee):
		return ee.ExitCode()
	case d.err != nil:
		t.Fatalf("%v: %v", d.cmd.Args, d.err)
	}
	return 0
}

// freePort returns a loopback port nobody listens on (server-everything
// takes its port from $PORT and prints no address).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// runWitness runs a witness verb to its end and returns its exit code and
// output.
func runWitness(t *testing.T, wit string, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, wit, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), string(out)
	case err != nil:
		t.Fatalf("witness %v: %v\n%s", args, err, out)
	}
	return 0, string(out)
}

// TestInspectorHTTP drives server-everything in streamableHttp mode with
// the MCP Inspector's CLI over its HTTP transport (issue 14 item 7), one
// session per --method: directly, through the real `witness proxy --listen
// --upstream`, and from each session's cassette (mcp/N/cassette.jsonl)
// through `witness serve --listen`. The Inspector prints the same bytes and
// exits 0 all three ways; what it printed is the answer the session
// cassette holds; each session log has its events (checkEvents) and passes
// `witness verify --events` (integrity only, signed with the proxy's
// keyring: exit 0), as does the proxy's own log; serve exits 0 at SIGTERM
// with --require-all (every recorded request was asked for, no miss).
// Nothing is normalised: none of these answers carries server-everything's
// timestamps (the "created at" of its dynamic resources).
func TestInspectorHTTP(t *testing.T) {
	t.Parallel()
	p := needPeers(t)
	p.needInspector(t)
	wit := witness(t, p.root)
	home := t.TempDir()
	wenv := env(home)
	keys := filepath.Join(home, "keys.json")
	if code, out := runWitness(t, wit, wenv, "keygen", "--keyring", keys); code != 0 {
		t.Fatalf("keygen: exit %d\n%s", code, out)
	}

	port := freePort(t)
	up := startDaemon(t, []string{p.node, p.everything, "streamableHttp"}, env(home, fmt.Sprintf("PORT=%d", port)), port)
	rec := filepath.Join(t.TempDir(), "rec")
	proxy := startDaemon(t, []string{wit, "proxy", "--out", rec, "--keyring", keys, "--listen", "127.0.0.1:0", "--upstream", up.URL}, wenv, 0)

	methods := []struct {
		name   string
		method []string
	}{
		{"tools-list", []string{"--method", "tools/list"}},
		{"tools-call", []string{"--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=witnessed over HTTP"}},
		{"resources-read", []string{"--method", "resources/read", "--uri", "demo://resource/static/document/features.md"}},
		{"prompts-get", []string{"--method", "prompts/get", "--prompt-name", "args-prompt", "--prompt-args", "city=Paris"}},
	}
	direct := make([]*inspectorResult, len(methods))
	// One Inspector run is one MCP session; run one at a time, so that the
	// proxy's session N is the Nth run.
	for i, m := range methods {
		direct[i] = p.runInspector(t, []string{up.URL + "/mcp", "--transport", "http"}, m.method)
		via := p.runInspector(t, []string{proxy.URL + "/mcp", "--transport", "http"}, m.method)
		if direct[i].code != 0 || via.code != 0 {
			t.Errorf("%s: exit directly %d, through the proxy %d\n%s\n%s", m.name, direct[i].code, via.code, tail(direct[i].stderr), tail(via.stderr))
		}
		if len(direct[i].stdout) == 0 {
			t.Errorf("%s: the Inspector printed nothing directly\n%s", m.name, tail(direct[i].stderr))
		}
		if !bytes.Equal(direct[i].stdout, via.stdout) {
			t.Errorf("%s: the Inspector printed different bytes through the proxy %s", m.name, firstDiff(direct[i].stdout, via.stdout))
		}
	}
	if code := proxy.stop(t); code != 0 {
		t.Fatalf("proxy: exit %d at SIGTERM\n%s", code, tail(proxy.stderr.String()))
	}
	if code, out := runWitness(t, wit, wenv, "verify", "--events", filepath.Join(rec, "events.jsonl"), "--keyring", keys); code != 0 {
		t.Errorf("witness verify --events (the proxy's own log): exit %d\n%s", code, out)
	}
	if sessions, _ := filepath.Glob(filepath.Join(rec, "mcp", "*", "cassette.jsonl")); len(sessions) != len(methods) {
		t.Fatalf("%d session cassettes %v, want %d (one per Inspector run)", len(sessions), sessions, len(methods))
	}

	for i, m := range methods {
		t.Run(m.name, func(t *testing.T) {
			dir := filepath.Join(rec, "mcp", strconv.Itoa(i+1))
			cas := filepath.Join(dir, "cassette.jsonl")
			_, _, lines := readCassette(t, cas)
			answer := answerTo(t, lines, m.method[1])
			got, err1 := canon.Transform(direct[i].stdout)
			want, err2 := canon.Transform(answer.Result)
			if answer.Error != nil || err1 != nil || err2 != nil || !bytes.Equal(got, want) {
				t.Errorf("the Inspector printed %.300s\nsession %d's answer is %.300s (%v %v)", direct[i].stdout, i+1, answer.Raw, err1, err2)
			}
			counts := checkEvents(t, lines, readEvents(t, filepath.Join(dir, "events.jsonl")))
			t.Logf("session %d: %d wire lines, events checked per kind: %v", i+1, len(lines), counts)
			if code, out := runWitness(t, wit, wenv, "verify", "--events", filepath.Join(dir, "events.jsonl"), "--keyring", keys); code != 0 {
				t.Errorf("witness verify --events mcp/%d/events.jsonl: exit %d\n%s", i+1, code, out)
			}

			serve := startDaemon(t, []string{wit, "serve", "--cassette", cas, "--listen", "127.0.0.1:0", "--require-all"}, wenv, 0)
			replayed := p.runInspector(t, []string{serve.URL + "/mcp", "--transport", "http"}, m.method)
			code := serve.stop(t)
			if replayed.code != 0 || code != 0 {
				t.Errorf("exit: the Inspector %d, serve %d\n%s\n%s", replayed.code, code, tail(replayed.stderr), tail(serve.stderr.String()))
			}
			if !bytes.Equal(direct[i].stdout, replayed.stdout) {
				t.Errorf("the Inspector printed different bytes from serve %s", firstDiff(direct[i].stdout, replayed.stdout))
			}
			t.Logf("%d bytes the same direct, through the proxy and replayed", len(direct[i].stdout))
		})
	}
}
