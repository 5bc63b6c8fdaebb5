package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-trace-witness/witness/mcp"
)

// everything returns the command of the pinned server-everything peer,
// failing the test when CI=true and the peers are missing, skipping
// otherwise.
func everything(t *testing.T) []string {
	t.Helper()
	script, _ := filepath.Abs("../testdata/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(script); serr != nil || err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("npm peers missing (%v %v): run 'make peers'", serr, err)
		}
		t.Skip("npm peers missing: run 'make peers'")
	}
	return []string{node, script, "stdio"}
}

// rpcHost drives a session: each request is written, then lines are read
// until the response with its id; notifications in between are kept.
type rpcHost struct {
	t    *testing.T
	w    io.WriteCloser
	r    *bufio.Reader
	sent bytes.Buffer
	got  bytes.Buffer
	resp map[string]string // exact id token -> response line
	note []string          // notifications and server requests, in order
}

func newRPCHost(t *testing.T, w io.WriteCloser, r io.Reader) *rpcHost {
	return &rpcHost{t: t, w: w, r: bufio.NewReader(r), resp: map[string]string{}}
}

func (h *rpcHost) write(line string) {
	h.t.Helper()
	h.sent.WriteString(line + "\n")
	if _, err := io.WriteString(h.w, line+"\n"); err != nil {
		h.t.Fatalf("host write: %v", err)
	}
}

func (h *rpcHost) call(id, line string) string {
	h.t.Helper()
	h.write(line)
	for {
		l, err := h.r.ReadString('\n')
		h.got.WriteString(l)
		if err != nil {
			h.t.Fatalf("waiting for id %s: %v", id, err)
		}
		m, perr := mcp.Parse([]byte(strings.TrimSuffix(l, "\n")))
		if perr != nil {
			h.t.Fatalf("server sent a non-JSON-RPC line: %q", l)
		}
		if m.Kind == mcp.KindResponse {
			h.resp[string(m.ID)] = l
			if string(m.ID) == id {
				return l
			}
			continue
		}
		h.note = append(h.note, l)
	}
}

func (h *rpcHost) finish() {
	h.w.Close()
	rest, _ := io.ReadAll(h.r)
	h.got.Write(rest)
	for _, l := range strings.SplitAfter(string(rest), "\n") {
		if l != "" {
			h.note = append(h.note, l)
		}
	}
}

// everythingSession is a session with server-everything: handshake, the
// tool list (every page), three tool calls including an error, a ping.
func everythingSession(h *rpcHost) {
	h.call("1", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"witness-test-host","version":"0.0.1"}}}`)
	h.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	cursor := ""
	for i := 2; ; i++ {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":` + cursor + `}`
		}
		id := string(rune('0' + i))
		l := h.call(id, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list","params":`+params+`}`)
		m, _ := mcp.Parse([]byte(strings.TrimSpace(l)))
		var res struct {
			NextCursor *string `json:"nextCursor"`
		}
		_ = json.Unmarshal(m.Result, &res)
		if res.NextCursor == nil || *res.NextCursor == "" || i > 8 {
			break
		}
		cursor = quoteJSON(*res.NextCursor)
	}
	h.call(`"echo-1"`, `{"jsonrpc":"2.0","id":"echo-1","method":"tools/call","params":{"name":"echo","arguments":{"message":"héllo 🎉"}}}`)
	h.call("0", `{"jsonrpc":"2.0","id":0,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":2,"b":40},"_meta":{"progressToken":"p"}}}`)
	h.call("20", `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`)
	h.call("21", `{"jsonrpc":"2.0","id":21,"method":"ping"}`)
	h.finish()
}

// runDirect runs the session against the server itself.
func runDirect(t *testing.T, command []string, session func(*rpcHost)) *rpcHost {
	t.Helper()
	cmd := exec.Command(command[0], command[1:]...)
	ownGroup(cmd)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // a failed session must not leave the server behind
		killGroup(cmd)
		waitGroupGone(cmd.Process.Pid, 2*time.Second)
	})
	h := newRPCHost(t, in, out)
	session(h)
	_ = cmd.Wait()
	if groupAlive(cmd.Process.Pid) {
		t.Errorf("the directly run server's group %d outlived stdin EOF; killing it", cmd.Process.Pid)
		killGroup(cmd)
		waitGroupGone(cmd.Process.Pid, 2*time.Second)
	}
	return h
}

// runProxied runs the session through Run.
func runProxied(t *testing.T, command []string, session func(*rpcHost)) (*rpcHost, *Result) {
	t.Helper()
	return runProxiedEnv(t, command, nil, session)
}

// runProxiedEnv runs the session through Run, the server getting env.
func runProxiedEnv(t *testing.T, command, env []string, session func(*rpcHost)) (*rpcHost, *Result) {
	t.Helper()
	hostW, proxyIn := io.Pipe()
	proxyOut, hostR := io.Pipe()
	type ret struct {
		res *Result
		err error
	}
	done := make(chan ret, 1)
	pid := 0
	defer func() {
		if pid != 0 && groupAlive(pid) {
			t.Errorf("process group %d survived the proxy", pid)
		}
	}()
	go func() {
		res, err := Run(context.Background(), Options{OutDir: filepath.Join(t.TempDir(), "rec"), Command: command, Env: env,
			Stdin: hostW, Stdout: hostR, Getenv: frozenEnv, KillGrace: 3 * time.Second, Started: func(p int) { pid = p }})
		hostR.Close()
		done <- ret{res, err}
	}()
	h := newRPCHost(t, proxyIn, proxyOut)
	session(h)
	r := <-done
	hostW.Close()
	if r.err != nil {
		t.Fatal(r.err)
	}
	return h, r.res
}

// TestDirectVersusProxy: against server-everything and the Go SDK server,
// the host sees the same bytes directly and through the proxy, and the
// cassette holds exactly the bytes the host sent and received. The order of
// unprompted notifications relative to responses depends on timing, so
// responses are compared by id (exact bytes) and notifications as a sorted
// list (exact bytes); neither server randomises a field of these answers.
func TestDirectVersusProxy(t *testing.T) {
	for _, c := range []struct {
		name    string
		command func(*testing.T) []string
		session func(*rpcHost)
		tools   int
	}{
		{"server-everything", everything, everythingSession, 10},
		{"gosdk", gosdk, gosdkSession, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			command := c.command(t)
			direct := runDirect(t, command, c.session)
			via, res := runProxied(t, command, c.session)
			if len(direct.resp) < 6 {
				t.Fatalf("direct session got only %d responses", len(direct.resp))
			}
			sameSession(t, direct, via)
			if via.sent.String() != direct.sent.String() {
				t.Errorf("the host sent different bytes")
			}
			c2s, s2c, _ := readCassette(t, res.Cassette)
			if c2s != via.sent.String() {
				t.Errorf("cassette c2s != bytes the host sent:\n%q\n%q", c2s, via.sent.String())
			}
			if s2c != via.got.String() {
				t.Errorf("cassette s2c != bytes the host received")
			}
			evs := readEvents(t, res.Events)
			var calls, responses int
			for _, e := range evs {
				switch e.Kind {
				case "tool_call":
					calls++
				case "tool_response":
					responses++
				}
			}
			if calls < 3 || responses != calls || evs[0].Header.Server.Name == "" || len(evs[0].Header.Server.Tools) < c.tools {
				t.Errorf("calls %d responses %d header %+v", calls, responses, evs[0].Header.Server)
			}
		})
	}
}
