package proxy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/cassette"
)

// envJoinGroup makes the test binary a hostile server (see TestMain) that
// moves into the process group of the proxy that started it and leaves a
// daemonised grandchild there: "server" answers the handshake until its
// stdin closes, "child" starts the grandchild and exits at once (the
// double fork), "grandchild" joins the proxy's group too, reports its pid
// on stderr ("joingroup: grandchild PID") and sleeps.
const envJoinGroup = "WITNESS_PROXY_TEST_JOINGROUP"

// echoServer is the path of testdata/servers/echo, built by echo.
var echoServer string

func TestMain(m *testing.M) {
	if cas := os.Getenv(envServe); cas != "" {
		os.Exit(serveMain(cas))
	}
	if role := os.Getenv(envJoinGroup); role != "" { // before envProxyMain: the server inherits it
		os.Exit(joinGroupMain(role))
	}
	if out := os.Getenv(envProxyMain); out != "" {
		os.Exit(proxyMain(out, os.Args[1:]))
	}
	if os.Getenv(envBenchHop) != "" {
		os.Exit(hopMain(os.Args[1:]))
	}
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// echo returns the path of testdata/servers/echo, built on first use (not
// in TestMain, so that fuzz workers start fast).
func echo(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "witness-proxy-test")
		if buildErr != nil {
			return
		}
		echoServer = filepath.Join(buildDir, "echo")
		out, err := exec.Command("go", "build", "-o", echoServer, "../testdata/servers/echo").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("build echo server: %v: %s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return echoServer
}

// memSink keeps every line it is given.
type memSink struct {
	mu    sync.Mutex
	lines []sinkLine
	lives []string
}

type sinkLine struct {
	dir     Dir
	line    string
	partial bool
	cont    bool
}

func (s *memSink) Line(l WireLine) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, sinkLine{l.Dir, string(l.Data), l.Partial, l.Cont})
	return nil
}

func (s *memSink) Life(rec cassette.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lives = append(s.lives, rec.Life+":"+string(rec.Stream)+rec.Signal)
	return nil
}

func (s *memSink) Settle() error { return nil }

func (s *memSink) joined(dir Dir) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, l := range s.lines {
		if l.dir == dir {
			b.WriteString(l.line)
		}
	}
	return b.String()
}

// session is a scripted host: it writes each request line and, for lines
// with an id, reads until it has seen that many response lines.
var session = []string{
	`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
	`{"jsonrpc":"2.0","id":"3","method":"tools/list","params":{"cursor":"page-2"}}`,
	`{"jsonrpc":"2.0", "id":0,"method":"tools/call","params":{"name":"echo","arguments":{"text":"héllo \u00e9 1.0"}}}`,
	`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"add","arguments":{"a":1.0,"b":2}}}`,
	`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"fail","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":6,"method":"ping"}`,
}

// drive plays session on w and returns everything read from r until EOF.
func drive(t *testing.T, w io.WriteCloser, r io.Reader) string {
	t.Helper()
	br := bufio.NewReader(r)
	var got bytes.Buffer
	for _, l := range session {
		if _, err := io.WriteString(w, l+"\n"); err != nil {
			t.Fatalf("write: %v", err)
		}
		if !strings.Contains(l, `"id"`) {
			continue
		}
		line, err := br.ReadString('\n')
		got.WriteString(line)
		if err != nil {
			t.Fatalf("read reply to %s: %v (got %q)", l, err, got.String())
		}
	}
	w.Close()
	rest, _ := io.ReadAll(br)
	got.Write(rest)
	return got.String()
}

func direct(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(echo(t), args...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got := drive(t, in, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("direct server: %v", err)
	}
	return got
}

type proxied struct {
	out     *Outcome
	err     error
	host    string // what the host read
	stderr  string
	sink    *memSink
	pid     int
	started chan int
}

// viaProxy runs the session through a Forwarder; script drives the host side.
func viaProxy(t *testing.T, fw *Forwarder, script func(w io.WriteCloser, r io.Reader) string) *proxied {
	t.Helper()
	return viaProxyWithSink(t, fw, nil, script)
}

// viaProxyWithSink is viaProxy with the given sink (nil: a memSink).
func viaProxyWithSink(t *testing.T, fw *Forwarder, sink Sink, script func(w io.WriteCloser, r io.Reader) string) *proxied {
	t.Helper()
	hostW, proxyIn := io.Pipe()
	proxyOut, hostR := io.Pipe()
	_ = hostW
	var stderr bytes.Buffer
	p := &proxied{sink: &memSink{}, started: make(chan int, 1)}
	fw.Stdin = hostW
	fw.Stdout = hostR
	fw.Stderr = &stderr
	fw.Sink = p.sink
	if sink != nil {
		fw.Sink = sink
	}
	fw.Started = func(pid int) { p.started <- pid }
	done := make(chan struct{})
	go func() {
		p.out, p.err = fw.Run(context.Background())
		close(done)
	}()
	// once the proxy has stopped, a script's write fails as on a real pipe
	// whose reader exited (io.Pipe would block it forever)
	go func() {
		<-done
		hostW.Close()
	}()
	p.pid = <-p.started
	p.host = script(proxyIn, proxyOut)
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("proxy did not finish")
	}
	hostW.Close()
	p.stderr = stderr.String()
	if p.err != nil {
		t.Fatalf("proxy: %v", p.err)
	}
	if groupAlive(p.pid) {
		t.Errorf("process group %d survived the proxy", p.pid)
	}
	return p
}

func TestForwardByteIdentical(t *testing.T) {
	want := direct(t)
	var sent bytes.Buffer
	p := viaProxy(t, &Forwarder{Command: []string{echo(t), "-banner"}}, func(w io.WriteCloser, r io.Reader) string {
		return drive(t, teeWriteCloser{w, &sent}, r)
	})
	if p.host != want {
		t.Errorf("host transcript differs through the proxy:\n direct %q\n  proxy %q", want, p.host)
	}
	if got := p.sink.joined(S2C); got != p.host {
		t.Errorf("recorded s2c != bytes the host received:\n%q\n%q", got, p.host)
	}
	if got := p.sink.joined(C2S); got != sent.String() {
		t.Errorf("recorded c2s != bytes the host sent:\n%q\n%q", got, sent.String())
	}
	if p.stderr != "echo server: ready\n" || p.sink.joined(Stderr) != p.stderr {
		t.Errorf("stderr passthrough %q, recorded %q", p.stderr, p.sink.joined(Stderr))
	}
	if p.out.ExitStatus != 0 || p.out.RecordErr != nil {
		t.Errorf("outcome %+v", p.out)
	}
}

type teeWriteCloser struct {
	w   io.WriteCloser
	tee *bytes.Buffer
}

func (t teeWriteCloser) Write(b []byte) (int, error) { t.tee.Write(b); return t.w.Write(b) }
func (t teeWriteCloser) Close() error                { return t.w.Close() }

func TestForwardPartialLineAndExitStatus(t *testing.T) {
	p := viaProxy(t, &Forwarder{Command: []string{echo(t), "-exit", "7"}}, func(w io.WriteCloser, r io.Reader) string {
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"+`{"jsonrpc":"2.0","id":2,"meth`)
		w.Close()
		b, _ := io.ReadAll(r)
		return string(b)
	})
	if p.out.ExitStatus != 7 {
		t.Errorf("exit status %d, want 7", p.out.ExitStatus)
	}
	// the server got the partial line as is: it says so on stderr
	if !strings.Contains(p.stderr, `not json: "{\"jsonrpc\":\"2.0\",\"id\":2,\"meth"`) {
		t.Errorf("server stderr %q: partial line not forwarded as is", p.stderr)
	}
	last := p.sink.lines
	var partial *sinkLine
	for i := range last {
		if last[i].dir == C2S && last[i].partial {
			partial = &last[i]
		}
	}
	if partial == nil || partial.line != `{"jsonrpc":"2.0","id":2,"meth` {
		t.Errorf("partial c2s line not recorded as partial: %+v", p.sink.lines)
	}
	if p.host != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Errorf("host got %q", p.host)
	}
}

func TestForwardSignalToGroup(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	p := viaProxy(t, &Forwarder{Command: []string{echo(t)}, Signals: sigs}, func(w io.WriteCloser, r io.Reader) string {
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
		br := bufio.NewReader(r)
		line, _ := br.ReadString('\n')
		sigs <- syscall.SIGTERM
		rest, _ := io.ReadAll(br)
		return line + string(rest)
	})
	if p.out.ExitStatus != 128+int(syscall.SIGTERM) || p.out.Signal == "" {
		t.Errorf("outcome %+v, want the server ended by SIGTERM (143)", p.out)
	}
	if len(p.out.Forwarded) != 1 || p.out.Killed {
		t.Errorf("outcome %+v", p.out)
	}
}

func TestForwardKillAfterGrace(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	start := time.Now()
	p := viaProxy(t, &Forwarder{Command: []string{echo(t), "-ignore-term"}, Signals: sigs, KillGrace: 300 * time.Millisecond},
		func(w io.WriteCloser, r io.Reader) string {
			// the reply proves the server is past its signal.Ignore
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
			bufio.NewReader(r).ReadString('\n')
			w.Close()
			sigs <- syscall.SIGTERM
			b, _ := io.ReadAll(r)
			return string(b)
		})
	if p.out.ExitStatus != 128+int(syscall.SIGKILL) || !p.out.Killed {
		t.Errorf("outcome %+v, want SIGKILL after the grace", p.out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestForwardNoGrandchildSurvives(t *testing.T) {
	p := viaProxy(t, &Forwarder{Command: []string{echo(t), "-child"}, DrainWait: 200 * time.Millisecond},
		func(w io.WriteCloser, r io.Reader) string {
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
			w.Close()
			b, _ := io.ReadAll(r)
			return string(b)
		})
	if !strings.Contains(p.stderr, "echo server: child ") {
		t.Fatalf("no grandchild started: %q", p.stderr)
	}
	if !p.out.Leftovers {
		t.Errorf("outcome %+v: the grandchild was not reported", p.out)
	}
	// viaProxy checks that no process of the group is left
}

func TestLineSplitter(t *testing.T) {
	sink := &memSink{}
	s := lineSplitter{max: 4, dir: C2S, rec: newRecorder(sink)}
	var fwd strings.Builder
	var got []string
	seen := 0
	note := func(step string) {
		for _, l := range sink.lines[seen:] {
			flag := ""
			if l.partial {
				flag = "/partial"
			}
			if l.cont {
				flag = "/cont"
			}
			got = append(got, fmt.Sprintf("%q:%q%s", step, l.line, flag))
		}
		seen = len(sink.lines)
	}
	in := []string{"ab", "c\nd", "\n\n", "e\r\nf", "ghijk", "lm", "\n", "x", "toolong\ny"}
	for _, c := range in {
		pre, post, err := s.feed([]byte(c))
		if err != nil {
			t.Fatal(err)
		}
		fwd.Write(pre)
		fwd.Write(post)
		note(c)
	}
	pre, err := s.flush()
	if err != nil {
		t.Fatal(err)
	}
	fwd.Write(pre)
	note("eof")
	// every byte is forwarded once, in order, and only after it was recorded
	if want := strings.Join(in, ""); fwd.String() != want {
		t.Errorf("forwarded %q, want %q", fwd.String(), want)
	}
	if rec := sink.joined(C2S); rec != fwd.String() {
		t.Errorf("recorded %q, forwarded %q", rec, fwd.String())
	}
	// "f" and "ghijk" pass the limit of 4 without a newline: pieces,
	// forwarded at once; "toolong" is complete but over the limit: pieces
	// too, ended by its '\n'
	want := []string{
		`"c\nd":"abc\n"`, `"\n\n":"d\n"`, `"\n\n":"\n"`, `"e\r\nf":"e\r\n"`,
		`"ghijk":"f"/cont`, `"ghijk":"ghijk"/cont`, `"lm":"lm"/cont`, `"\n":"\n"`,
		`"toolong\ny":"x"/cont`, `"toolong\ny":"toolong"/cont`, `"toolong\ny":"\n"`, `"eof":"y"/partial`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records\n got %v\nwant %v", got, want)
	}
}

// failSink fails from its second line on.
type failSink struct{ n int }

func (f *failSink) Line(WireLine) error {
	f.n++
	if f.n > 1 {
		return fmt.Errorf("disk full (test)")
	}
	return nil
}
func (f *failSink) Life(cassette.Record) error { return nil }
func (f *failSink) Settle() error              { return nil }

// TestRecordingFailureStopsForwarding: when the sink fails, nothing it
// did not record is forwarded, the host's stdout is closed, the server is
// ended and the outcome says why. The server ignores stdin closing (a
// server that exits on EOF would end by itself and race the proxy's
// signal), so only the proxy's SIGTERM can end it.
func TestRecordingFailureStopsForwarding(t *testing.T) {
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	p := viaProxyWithSink(t, &Forwarder{Command: []string{hostile(t, "ignoreeof")}, KillGrace: 500 * time.Millisecond}, &failSink{},
		func(w io.WriteCloser, r io.Reader) string {
			// line 1 is recorded and forwarded; the server's answer is the
			// sink's second line: it fails, so the host never gets it
			io.WriteString(w, init+"\n")
			b, _ := io.ReadAll(r) // returns when the proxy closes the host's stdout
			return string(b)
		})
	if p.host != "" {
		t.Errorf("the host got bytes that were not recorded: %q", p.host)
	}
	if p.out.RecordErr == nil || !strings.Contains(p.out.Failure, "disk full (test)") {
		t.Errorf("outcome %+v: the failure is not reported", p.out)
	}
	if p.out.ExitStatus != 128+15 && p.out.ExitStatus != 128+9 {
		t.Errorf("the server was not ended by the proxy (SIGTERM or SIGKILL): %+v", p.out)
	}
}

// TestForwardHugeLine: a 20 MiB line passes through unchanged and reaches
// the sink in pieces.
func TestForwardHugeLine(t *testing.T) {
	const size = 20 << 20
	p := viaProxy(t, &Forwarder{Command: []string{"sh", "-c", "head -c " + fmt.Sprint(size) + " /dev/zero | tr '\\0' a; echo"}},
		func(w io.WriteCloser, r io.Reader) string {
			b, _ := io.ReadAll(r) // stdin stays open: no grace runs out
			w.Close()
			return string(b)
		})
	if len(p.host) != size+1 || strings.Trim(p.host, "a") != "\n" {
		t.Fatalf("host got %d bytes; outcome %+v; stderr %q", len(p.host), p.out, p.stderr)
	}
	pieces := 0
	for _, l := range p.sink.lines {
		if l.dir == S2C {
			pieces++
		}
	}
	if got := p.sink.joined(S2C); got != p.host || pieces < 2 {
		t.Errorf("recorded %d bytes in %d pieces", len(got), pieces)
	}
}

// TestServerExitsMidReply: a server that dies in the middle of a line: the
// host gets the partial bytes as they were, the sink gets them flagged
// partial, and the proxy exits with the server's status.
func TestServerExitsMidReply(t *testing.T) {
	p := viaProxy(t, &Forwarder{Command: []string{"sh", "-c", `printf '{"jsonrpc":"2.0","id":1,"result":{"con'; exit 3`}},
		func(w io.WriteCloser, r io.Reader) string {
			b, _ := io.ReadAll(r)
			w.Close()
			return string(b)
		})
	if p.host != `{"jsonrpc":"2.0","id":1,"result":{"con` || p.out.ExitStatus != 3 {
		t.Errorf("host got %q, exit %d", p.host, p.out.ExitStatus)
	}
	if n := len(p.sink.lines); n != 1 || !p.sink.lines[0].partial {
		t.Errorf("sink lines %+v", p.sink.lines)
	}
}
